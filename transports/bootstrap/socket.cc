// TCP helpers of the bootstrap (see socket.h).
#include "transports/bootstrap/socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

// Longer timeouts are clamped so that the deadline arithmetic cannot overflow (~100 days).
constexpr int64_t kMaxTimeoutMs = int64_t{100} * 24 * 3600 * 1000;

bool isPeerGone(int error_number) {
  return error_number == ECONNRESET || error_number == EPIPE || error_number == ENOTCONN;
}

// Waits until `fd` is ready for `events`; Timeout once the deadline has passed.
IoStatus waitReady(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    int ready = poll(&entry, 1, deadline.pollTimeoutMs());
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return {IoStatus::Kind::SystemError, errno};
    if (ready == 0) {
      if (deadline.expired()) return {IoStatus::Kind::Timeout, 0};
      continue;  // poll rounds down; the deadline has not quite passed
    }
    return {};
  }
}

void setNoDelay(int fd) {
  int one = 1;
  // Only latency depends on it; a failure is not worth failing the connection for.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool isRetryableConnectError(int error_number) {
  return error_number == ECONNREFUSED || error_number == ETIMEDOUT ||
         error_number == EHOSTUNREACH || error_number == ENETUNREACH ||
         error_number == ECONNRESET || error_number == EAGAIN;
}

// Connecting again and again to a loopback port in the ephemeral range where nobody listens can
// end in TCP simultaneous open with itself (source port == destination port). Such a connection
// is no root: it counts as refused.
bool isConnectedToItself(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_length = sizeof(local), peer_length = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) < 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) < 0) return false;
  return local_length == peer_length && std::memcmp(&local, &peer, local_length) == 0;
}

// One connection attempt. Ok, or the errno of the failure in error_number.
IoStatus connectOnce(const SocketAddress& address, const Deadline& deadline, Socket* out) {
  Socket socket(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return {IoStatus::Kind::SystemError, errno};
  int rc =
      ::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address.storage), address.length);
  if (rc < 0 && errno != EINPROGRESS && errno != EINTR) return {IoStatus::Kind::SystemError, errno};
  if (rc < 0) {
    IoStatus ready = waitReady(socket.fd(), POLLOUT, deadline);
    if (!ready.ok()) return ready;
    int error_number = 0;
    socklen_t length = sizeof(error_number);
    if (getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error_number, &length) < 0) {
      return {IoStatus::Kind::SystemError, errno};
    }
    if (error_number != 0) return {IoStatus::Kind::SystemError, error_number};
  }
  if (isConnectedToItself(socket.fd())) return {IoStatus::Kind::SystemError, ECONNREFUSED};
  setNoDelay(socket.fd());
  *out = std::move(socket);
  return {};
}

// Picks the address findListenAddress describes from the interface's addresses.
// The interface SCCL_SOCKET_IFNAME names, as NCCL_SOCKET_IFNAME does: "=NAME" that interface
// only; otherwise an interface of exactly that name, else the first whose name starts with it
// ("pv" is pv0 in one network namespace and pv1 in the next, so one setting serves a job whose
// ranks see different names).
std::string resolveInterfaceName(const ifaddrs* list, const std::string& setting) {
  if (!setting.empty() && setting[0] == '=') return setting.substr(1);
  std::string prefixed;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_name == nullptr) continue;
    const std::string name = entry->ifa_name;
    if (name == setting) return name;
    if (prefixed.empty() && name.rfind(setting, 0) == 0) prefixed = name;
  }
  return prefixed.empty() ? setting : prefixed;
}

const sockaddr* pickInterfaceAddress(const ifaddrs* list, const std::string& setting,
                                     bool* interface_seen) {
  const std::string name = resolveInterfaceName(list, setting);
  const sockaddr* ipv4 = nullptr;
  const sockaddr* global_ipv6 = nullptr;
  const sockaddr* any_ipv6 = nullptr;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_name == nullptr || name != entry->ifa_name) continue;
    *interface_seen = true;
    const sockaddr* address = entry->ifa_addr;
    if (address == nullptr) continue;
    if (address->sa_family == AF_INET && ipv4 == nullptr) ipv4 = address;
    if (address->sa_family != AF_INET6) continue;
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (any_ipv6 == nullptr) any_ipv6 = address;
    if (global_ipv6 == nullptr && !IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) global_ipv6 = address;
  }
  if (ipv4 != nullptr) return ipv4;
  return global_ipv6 != nullptr ? global_ipv6 : any_ipv6;
}

std::string interfaceNames(const ifaddrs* list) {
  std::string names;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_name == nullptr) continue;
    std::string name = entry->ifa_name;
    std::string quoted = " " + name + ",";
    if ((" " + names).find(quoted) != std::string::npos) continue;
    names += name + ", ";
  }
  if (!names.empty()) names.resize(names.size() - 2);
  return names;
}

}  // namespace

Deadline::Deadline(int64_t timeout_ms)
    : timeout_ms_(std::clamp<int64_t>(timeout_ms, 0, kMaxTimeoutMs)),
      at_(Clock::now() + std::chrono::milliseconds(timeout_ms_)) {}

bool Deadline::expired() const {
  return Clock::now() >= at_;
}

int Deadline::pollTimeoutMs() const {
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto left_ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(left_ms, INT_MAX));
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string SocketAddress::toString() const {
  // snprintf rather than string concatenation: GCC 12 at -O3 warns falsely (-Wrestrict) on the
  // latter.
  char host[INET6_ADDRSTRLEN] = "?";
  char text[INET6_ADDRSTRLEN + 24];
  if (storage.ss_family == AF_INET) {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
    snprintf(text, sizeof(text), "%s:%u", host, static_cast<unsigned>(ntohs(in4->sin_port)));
    return text;
  }
  if (storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    char scope[16] = "";
    if (in6->sin6_scope_id != 0) snprintf(scope, sizeof(scope), "%%%u", in6->sin6_scope_id);
    snprintf(text, sizeof(text), "[%s%s]:%u", host, scope,
             static_cast<unsigned>(ntohs(in6->sin6_port)));
    return text;
  }
  return "(no address)";
}

IoStatus sendSome(int fd, const void* data, size_t bytes, size_t* moved) {
  *moved = 0;
  for (;;) {
    ssize_t sent = send(fd, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) {
      *moved = static_cast<size_t>(sent);
      return {};
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    if (isPeerGone(errno)) return {IoStatus::Kind::PeerClosed, errno};
    return {IoStatus::Kind::SystemError, errno};
  }
}

IoStatus recvSome(int fd, void* data, size_t bytes, size_t* moved) {
  *moved = 0;
  for (;;) {
    ssize_t got = recv(fd, data, bytes, MSG_DONTWAIT);
    if (got > 0) {
      *moved = static_cast<size_t>(got);
      return {};
    }
    if (got == 0) return {IoStatus::Kind::PeerClosed, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    if (isPeerGone(errno)) return {IoStatus::Kind::PeerClosed, errno};
    return {IoStatus::Kind::SystemError, errno};
  }
}

IoStatus sendExact(const Socket& socket, const void* data, size_t bytes, const Deadline& deadline) {
  const auto* cursor = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    size_t moved = 0;
    IoStatus status = sendSome(socket.fd(), cursor, bytes, &moved);
    if (!status.ok()) return status;
    cursor += moved;
    bytes -= moved;
    if (bytes == 0) break;
    if (moved == 0) {
      status = waitReady(socket.fd(), POLLOUT, deadline);
      if (!status.ok()) return status;
    }
  }
  return {};
}

IoStatus recvExact(const Socket& socket, void* data, size_t bytes, const Deadline& deadline) {
  auto* cursor = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    size_t moved = 0;
    IoStatus status = recvSome(socket.fd(), cursor, bytes, &moved);
    if (!status.ok()) return status;
    cursor += moved;
    bytes -= moved;
    if (bytes == 0) break;
    if (moved == 0) {
      status = waitReady(socket.fd(), POLLIN, deadline);
      if (!status.ok()) return status;
    }
  }
  return {};
}

scclResult_t connectWithRetry(const SocketAddress& address, const Deadline& deadline, Socket* out) {
  auto backoff = std::chrono::milliseconds(2);
  for (;;) {
    Socket socket;
    IoStatus status = connectOnce(address, deadline, &socket);
    if (status.ok()) {
      *out = std::move(socket);
      return scclSuccess;
    }
    bool retryable =
        status.kind == IoStatus::Kind::Timeout || isRetryableConnectError(status.error_number);
    if (!retryable) {
      return fail(scclSystemError, "bootstrap: cannot connect to the root at %s: %s",
                  address.toString().c_str(), strerror(status.error_number));
    }
    if (deadline.expired()) {
      const char* last =
          status.kind == IoStatus::Kind::Timeout ? "no answer" : strerror(status.error_number);
      return fail(scclTimeout,
                  "bootstrap: could not reach the root at %s within %lld ms (%s); is the rank "
                  "that made the unique id running, and across hosts, is SCCL_SOCKET_IFNAME set "
                  "there?",
                  address.toString().c_str(), static_cast<long long>(deadline.timeoutMs()), last);
    }
    auto pause = std::min<std::chrono::milliseconds>(
        backoff, std::chrono::milliseconds(deadline.pollTimeoutMs()));
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

scclResult_t listenOnEphemeralPort(const SocketAddress& address, Socket* out,
                                   SocketAddress* bound) {
  Socket socket(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket.valid()) {
    return fail(scclSystemError, "bootstrap: cannot create a socket: %s", strerror(errno));
  }
  SocketAddress request = address;
  if (request.storage.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&request.storage)->sin_port = 0;
  } else {
    reinterpret_cast<sockaddr_in6*>(&request.storage)->sin6_port = 0;
  }
  if (bind(socket.fd(), reinterpret_cast<const sockaddr*>(&request.storage), request.length) < 0) {
    return fail(scclSystemError, "bootstrap: cannot bind to %s: %s", request.toString().c_str(),
                strerror(errno));
  }
  if (listen(socket.fd(), SOMAXCONN) < 0) {
    return fail(scclSystemError, "bootstrap: cannot listen on %s: %s", request.toString().c_str(),
                strerror(errno));
  }
  SocketAddress actual;
  actual.length = sizeof(actual.storage);
  if (getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&actual.storage), &actual.length) < 0) {
    return fail(scclSystemError, "bootstrap: getsockname failed: %s", strerror(errno));
  }
  *out = std::move(socket);
  *bound = actual;
  return scclSuccess;
}

IoStatus acceptConnection(const Socket& listener, Socket* out) {
  for (;;) {
    int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      *out = Socket(fd);
      return {};
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return {IoStatus::Kind::SystemError, errno};
  }
}

scclResult_t findListenAddress(const std::string& interface_name, SocketAddress* out) {
  SocketAddress address;
  if (interface_name.empty()) {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&address.storage);
    in4->sin_family = AF_INET;
    in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.length = sizeof(sockaddr_in);
    *out = address;
    return scclSuccess;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) < 0) {
    return fail(scclSystemError, "bootstrap: getifaddrs failed: %s", strerror(errno));
  }
  bool interface_seen = false;
  const sockaddr* chosen = pickInterfaceAddress(list, interface_name, &interface_seen);
  std::string known = interfaceNames(list);
  if (chosen != nullptr) {
    address.length = chosen->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&address.storage, chosen, address.length);
  }
  freeifaddrs(list);
  if (!interface_seen) {
    return fail(scclInvalidArgument,
                "bootstrap: SCCL_SOCKET_IFNAME names interface \"%s\", which matches no "
                "interface by name or prefix (interfaces: %s)",
                interface_name.c_str(), known.c_str());
  }
  if (chosen == nullptr) {
    return fail(scclInvalidArgument,
                "bootstrap: SCCL_SOCKET_IFNAME names interface \"%s\", which has no IPv4 or IPv6 "
                "address",
                interface_name.c_str());
  }
  *out = address;
  return scclSuccess;
}

}  // namespace sccl
