// The layout of scclUniqueId as the bootstrap fills it: where the root listens and the job token
// that every rank must present. The 128 bytes are packed field by field in network byte order,
// so an id made on one machine (or by one compiler) reads the same on any other.
//
//   offset  bytes  field
//        0      4  magic "SCID" (0x53434944)
//        4      2  bootstrap protocol version (kBootstrapProtocolVersion)
//        6      2  address family: 4 (IPv4) or 6 (IPv6)
//        8      2  root's TCP port
//       10      2  reserved, zero
//       12     16  root's address (IPv4: the first 4 bytes, the rest zero)
//       28      4  IPv6 scope id (interface index of a link-local address, else zero)
//       32     16  job token: random, one per id
//       48     80  reserved, zero
//
// The magic and the version never move, so a later layout can still be recognised and reported
// as "another version" rather than as garbage.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/socket.h"

namespace sccl {

// One number versions both the id layout and the wire protocol (see wire.h): a rank that reads
// the id also speaks to the root that made it.
constexpr uint16_t kBootstrapProtocolVersion = 1;
constexpr uint32_t kUniqueIdMagic = 0x53434944u;  // "SCID"

using JobToken = std::array<uint8_t, 16>;

enum class IdAddressFamily : uint16_t { IPv4 = 4, IPv6 = 6 };

struct UniqueIdContents {
  uint16_t protocol_version = kBootstrapProtocolVersion;
  IdAddressFamily family = IdAddressFamily::IPv4;
  uint16_t port = 0;
  std::array<uint8_t, 16> address{};
  uint32_t ipv6_scope_id = 0;
  JobToken token{};
};

// Byte offsets of the fields above (tests reach into ids through them).
namespace unique_id_offsets {
constexpr size_t kMagic = 0;
constexpr size_t kVersion = 4;
constexpr size_t kFamily = 6;
constexpr size_t kPort = 8;
constexpr size_t kReserved = 10;
constexpr size_t kAddress = 12;
constexpr size_t kScopeId = 28;
constexpr size_t kToken = 32;
constexpr size_t kTail = 48;
}  // namespace unique_id_offsets

void encodeUniqueId(const UniqueIdContents& contents, scclUniqueId* id);

// scclInvalidArgument when the bytes are not a sparsecoll id (magic, family, port, reserved
// bytes); scclInvalidUsage when it is one of another protocol version (the message names both).
scclResult_t decodeUniqueId(const scclUniqueId& id, UniqueIdContents* contents);

// 16 bytes from getrandom() (or /dev/urandom where the system call is missing).
scclResult_t generateJobToken(JobToken* token);

// Compares in time independent of where the tokens differ, so that a peer cannot guess a token
// byte by byte from response times.
bool jobTokensEqual(const JobToken& a, const JobToken& b);

// The root's address as a socket address, and back.
SocketAddress socketAddressOf(const UniqueIdContents& contents);
scclResult_t fillAddressFields(const SocketAddress& address, UniqueIdContents* contents);

}  // namespace sccl
