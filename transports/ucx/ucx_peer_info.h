// What UCX ranks tell each other at set-up, and how a rank watches a peer on its own host.
//
// Each rank publishes one record through the bootstrap: a fixed header (magic, format version,
// pid, the process's start time, a key naming its host and pid namespace, the length of the UCX
// worker address) followed by the address bytes. The record's framing is checked before use
// (decodePeerRecord): a wrong magic or version, an address longer than the record or than
// kMaxAddressBytes is scclRemoteError naming the rank. The address bytes themselves are opaque
// to us: ucp_ep_create parses them, and UCX offers no length-bounded variant to check them with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl {
namespace ucx {

// UCX worker addresses are a few hundred bytes; anything beyond this is not one.
constexpr size_t kMaxAddressBytes = 64 * 1024;

struct PeerInfo {
  int32_t pid = 0;
  uint64_t start_time = 0;  // /proc/<pid>/stat field 22: tells a reused pid apart
  uint64_t host_key = 0;    // hash of host name, boot id and pid namespace
};

PeerInfo describeThisProcess();

// The record of this rank: header + address.
std::vector<uint8_t> encodePeerRecord(const PeerInfo& info, const void* address,
                                      size_t address_bytes);
// Size of the header that precedes the address.
size_t peerRecordHeaderBytes();
// Checks and decodes rank `rank`'s record of `bytes` bytes.
scclResult_t decodePeerRecord(const uint8_t* record, size_t bytes, int rank, PeerInfo* info,
                              std::vector<uint8_t>* address);

// For a process on this host (same host_key): false once it has exited (or is a zombie, or its pid
// now belongs to another process). *state gets a short description for messages.
bool processAlive(const PeerInfo& info, std::string* state);

}  // namespace ucx
}  // namespace sccl
