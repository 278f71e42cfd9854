// Packing and unpacking of scclUniqueId (layout in unique_id.h) and the job token.
#include "transports/bootstrap/unique_id.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "transports/bootstrap/byte_order.h"

namespace sccl {
namespace {

namespace off = unique_id_offsets;

const uint8_t* idBytes(const scclUniqueId& id) {
  return reinterpret_cast<const uint8_t*>(id.internal);
}

bool allZero(const uint8_t* bytes, size_t count) {
  uint8_t any = 0;
  for (size_t i = 0; i < count; ++i) any |= bytes[i];
  return any == 0;
}

// Fills `bytes` from /dev/urandom; used only where getrandom() does not exist (old kernels).
scclResult_t readUrandom(uint8_t* bytes, size_t count) {
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(scclSystemError, "bootstrap: cannot open /dev/urandom: %s", strerror(errno));
  size_t filled = 0;
  while (filled < count) {
    ssize_t got = read(fd, bytes + filled, count - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      int error_number = (got < 0) ? errno : EIO;
      close(fd);
      return fail(scclSystemError, "bootstrap: reading /dev/urandom failed: %s",
                  strerror(error_number));
    }
    filled += static_cast<size_t>(got);
  }
  close(fd);
  return scclSuccess;
}

}  // namespace

void encodeUniqueId(const UniqueIdContents& contents, scclUniqueId* id) {
  using namespace byte_order;
  uint8_t* bytes = reinterpret_cast<uint8_t*>(id->internal);
  std::memset(bytes, 0, SCCL_UNIQUE_ID_BYTES);
  putU32(bytes + off::kMagic, kUniqueIdMagic);
  putU16(bytes + off::kVersion, contents.protocol_version);
  putU16(bytes + off::kFamily, static_cast<uint16_t>(contents.family));
  putU16(bytes + off::kPort, contents.port);
  std::memcpy(bytes + off::kAddress, contents.address.data(), contents.address.size());
  putU32(bytes + off::kScopeId, contents.ipv6_scope_id);
  std::memcpy(bytes + off::kToken, contents.token.data(), contents.token.size());
}

scclResult_t decodeUniqueId(const scclUniqueId& id, UniqueIdContents* contents) {
  using namespace byte_order;
  const uint8_t* bytes = idBytes(id);
  if (getU32(bytes + off::kMagic) != kUniqueIdMagic) {
    return fail(scclInvalidArgument,
                "bootstrap: not a sparsecoll unique id (bad magic); pass the id made by "
                "scclGetUniqueId unchanged");
  }
  uint16_t version = getU16(bytes + off::kVersion);
  if (version != kBootstrapProtocolVersion) {
    return fail(scclInvalidUsage,
                "bootstrap: the unique id is of bootstrap protocol version %u but this library "
                "speaks version %u; every rank must run the same sparsecoll version",
                static_cast<unsigned>(version), static_cast<unsigned>(kBootstrapProtocolVersion));
  }
  UniqueIdContents decoded;
  decoded.protocol_version = version;
  uint16_t family = getU16(bytes + off::kFamily);
  decoded.port = getU16(bytes + off::kPort);
  std::memcpy(decoded.address.data(), bytes + off::kAddress, decoded.address.size());
  decoded.ipv6_scope_id = getU32(bytes + off::kScopeId);
  std::memcpy(decoded.token.data(), bytes + off::kToken, decoded.token.size());
  bool family_known = family == static_cast<uint16_t>(IdAddressFamily::IPv4) ||
                      family == static_cast<uint16_t>(IdAddressFamily::IPv6);
  bool ipv4_tail_clear = family != static_cast<uint16_t>(IdAddressFamily::IPv4) ||
                         (allZero(decoded.address.data() + 4, 12) && decoded.ipv6_scope_id == 0);
  bool reserved_clear = allZero(bytes + off::kReserved, 2) &&
                        allZero(bytes + off::kTail, SCCL_UNIQUE_ID_BYTES - off::kTail);
  if (!family_known || decoded.port == 0 || !ipv4_tail_clear || !reserved_clear) {
    return fail(scclInvalidArgument,
                "bootstrap: corrupted unique id (address family %u, port %u%s); pass the id made "
                "by scclGetUniqueId unchanged",
                static_cast<unsigned>(family), static_cast<unsigned>(decoded.port),
                reserved_clear && ipv4_tail_clear ? "" : ", reserved bytes not zero");
  }
  decoded.family = static_cast<IdAddressFamily>(family);
  *contents = decoded;
  return scclSuccess;
}

scclResult_t generateJobToken(JobToken* token) {
  JobToken fresh;
  size_t filled = 0;
  while (filled < fresh.size()) {
    ssize_t got = getrandom(fresh.data() + filled, fresh.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == ENOSYS) {
      SCCL_CHECK(readUrandom(fresh.data(), fresh.size()));
      break;
    }
    if (got < 0) return fail(scclSystemError, "bootstrap: getrandom failed: %s", strerror(errno));
    filled += static_cast<size_t>(got);
  }
  *token = fresh;
  return scclSuccess;
}

bool jobTokensEqual(const JobToken& a, const JobToken& b) {
  uint8_t difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<uint8_t>(a[i] ^ b[i]);
  return difference == 0;
}

SocketAddress socketAddressOf(const UniqueIdContents& contents) {
  SocketAddress address;
  if (contents.family == IdAddressFamily::IPv4) {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&address.storage);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(contents.port);
    std::memcpy(&in4->sin_addr, contents.address.data(), 4);
    address.length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(contents.port);
    std::memcpy(&in6->sin6_addr, contents.address.data(), 16);
    in6->sin6_scope_id = contents.ipv6_scope_id;
    address.length = sizeof(sockaddr_in6);
  }
  return address;
}

scclResult_t fillAddressFields(const SocketAddress& address, UniqueIdContents* contents) {
  contents->address.fill(0);
  contents->ipv6_scope_id = 0;
  if (address.storage.ss_family == AF_INET) {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(&address.storage);
    contents->family = IdAddressFamily::IPv4;
    contents->port = ntohs(in4->sin_port);
    std::memcpy(contents->address.data(), &in4->sin_addr, 4);
    return scclSuccess;
  }
  if (address.storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    contents->family = IdAddressFamily::IPv6;
    contents->port = ntohs(in6->sin6_port);
    std::memcpy(contents->address.data(), &in6->sin6_addr, 16);
    contents->ipv6_scope_id = in6->sin6_scope_id;
    return scclSuccess;
  }
  return fail(scclInternalError, "bootstrap: address family %d cannot go into a unique id",
              static_cast<int>(address.storage.ss_family));
}

}  // namespace sccl
