// Small TCP helpers for the bootstrap: an owning socket, deadlines, exact sends and receives
// that wait with poll() and never past their deadline, connecting with retry, listening on an
// ephemeral port, and finding the address of a network interface.
//
// Every socket is created non-blocking and close-on-exec; waits happen only in poll(), so each
// has a deadline, and EINTR is retried. Sends use MSG_NOSIGNAL: a peer that went away yields an
// error, not SIGPIPE.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// A point in time after which waits give up. Remembers its length for error messages.
class Deadline {
 public:
  explicit Deadline(int64_t timeout_ms);
  int64_t timeoutMs() const { return timeout_ms_; }
  bool expired() const;
  // Milliseconds left, rounded up, as poll() takes them (0 once expired).
  int pollTimeoutMs() const;

 private:
  int64_t timeout_ms_;
  std::chrono::steady_clock::time_point at_;
};

// Owns a file descriptor; closes it on destruction. Move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  // "127.0.0.1:4242" or "[fe80::1%2]:4242".
  std::string toString() const;
};

// How an exact send or receive ended. `error_number` is the errno of a SystemError.
struct IoStatus {
  enum class Kind { Ok, Timeout, PeerClosed, SystemError };
  Kind kind = Kind::Ok;
  int error_number = 0;

  bool ok() const { return kind == Kind::Ok; }
};

// Sends or receives exactly `bytes` bytes, waiting in poll() until the deadline. A connection
// closed or reset by the peer is PeerClosed.
IoStatus sendExact(const Socket& socket, const void* data, size_t bytes, const Deadline& deadline);
IoStatus recvExact(const Socket& socket, void* data, size_t bytes, const Deadline& deadline);

// One non-blocking attempt, for event loops: *moved gets the bytes sent or received (0 when the
// call would block). Returns Ok, PeerClosed (orderly close, reset, broken pipe) or SystemError.
IoStatus sendSome(int fd, const void* data, size_t bytes, size_t* moved);
IoStatus recvSome(int fd, void* data, size_t bytes, size_t* moved);

// Connects to `address`, retrying refused or unreachable attempts with backoff until the
// deadline (the root may not be listening yet as this process sees it). The socket is
// non-blocking with TCP_NODELAY. scclTimeout when the deadline passes, scclSystemError for other
// failures; the message names the address and the last error.
scclResult_t connectWithRetry(const SocketAddress& address, const Deadline& deadline, Socket* out);

// Binds a listening socket on `address` with an ephemeral port; *bound gets the address with the
// port the kernel picked. The socket is non-blocking.
scclResult_t listenOnEphemeralPort(const SocketAddress& address, Socket* out, SocketAddress* bound);

// Accepts one pending connection, non-blocking and close-on-exec with TCP_NODELAY. *out stays
// invalid when none is pending. Returns Ok, or SystemError with errno (EMFILE and the like).
IoStatus acceptConnection(const Socket& listener, Socket* out);

// The address to listen on: 127.0.0.1 when `interface_name` is empty, else the interface's first
// IPv4 address, else its first global IPv6 address, else its first IPv6 address (link-local,
// with its scope id). scclInvalidArgument naming the interface (and those that exist) when there
// is no such interface or it has no address.
scclResult_t findListenAddress(const std::string& interface_name, SocketAddress* out);

}  // namespace sccl
