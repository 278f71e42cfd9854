// The bootstrap root's event loop: accepting, reading whole frames into bounded buffers,
// flushing queued replies, deadlines and closing (the protocol is in root_protocol.cc).
// Single-threaded: the process-wide root thread (bootstrap_root.cc) runs every handler to
// completion between two poll() calls, and connections are only removed at the end of a turn,
// so handlers may touch any connection.
#include "transports/bootstrap/root_service.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/log.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;
using wire::Bytes;
using wire::kHeaderBytes;

// A connection must deliver its whole hello this soon after it was accepted; a silent one only
// holds a descriptor until then.
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// How long a closing connection may take to read its last frames and hang up.
constexpr auto kLingerTimeout = std::chrono::seconds(2);
// After accept() fails (out of descriptors), the listener rests this long.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Connections without a hello beyond this many are closed at once.
constexpr size_t kMaxConnectionsAwaitingHello = 512;
// Longer rendezvous timeouts are clamped (~100 days) so that the deadline cannot overflow.
constexpr int64_t kMaxRendezvousTimeoutMs = int64_t{100} * 24 * 3600 * 1000;
// Reads per connection per wakeup, so that one busy connection cannot starve the others.
constexpr int kMaxReadsPerWakeup = 16;

}  // namespace

std::string formatText(const char* fmt, ...) {
  char text[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  return text;
}

RootService::RootService(Socket listener, const JobToken& token, std::string address,
                         int64_t rendezvous_timeout_ms)
    : listener_(std::move(listener)),
      token_(token),
      address_(std::move(address)),
      rendezvous_timeout_ms_(rendezvous_timeout_ms),
      rendezvous_deadline_(Clock::now() + std::chrono::milliseconds(std::min(
                                              rendezvous_timeout_ms, kMaxRendezvousTimeoutMs))) {}

void RootService::appendPollFds(std::vector<pollfd>* fds) {
  polled_.clear();
  polled_listener_ = listener_.valid() && Clock::now() >= accept_paused_until_;
  if (polled_listener_) fds->push_back({listener_.fd(), POLLIN, 0});
  for (auto& connection : connections_) {
    // Every connection is read, closing ones too (their input is discarded), so that a peer
    // hanging up is noticed at once.
    short events = POLLIN;
    if (!connection->outbox.empty()) events |= POLLOUT;
    fds->push_back({connection->socket.fd(), events, 0});
    polled_.push_back(connection.get());
  }
}

void RootService::handlePoll(const pollfd* fds) {
  if (phase_ == Phase::Done) return;
  size_t first = polled_listener_ ? 1 : 0;
  if (polled_listener_ && fds[0].revents != 0) acceptConnections();
  for (size_t i = 0; i < polled_.size(); ++i) {
    if (fds[first + i].revents != 0) service(*polled_[i], fds[first + i].revents);
  }
  polled_.clear();
  enforceDeadlines();
  removeClosed();
  if (phase_ == Phase::Done) stop();
}

void RootService::stop() {
  phase_ = Phase::Done;
  polled_.clear();
  connections_.clear();
  listener_.reset();
  SCCL_INFO(LogSubsys::Bootstrap, "bootstrap root %s: exiting", address_.c_str());
}

RootService::Clock::time_point RootService::nextDeadline() const {
  Clock::time_point next = Clock::time_point::max();
  if (phase_ == Phase::Rendezvous) next = rendezvous_deadline_;
  if (listener_.valid() && accept_paused_until_ > Clock::now()) {
    next = std::min(next, accept_paused_until_);
  }
  for (const auto& connection : connections_) {
    if (connection->state != ConnState::Rank) next = std::min(next, connection->deadline);
  }
  return next;  // max(): rounds may be hours apart
}

void RootService::acceptConnections() {
  for (;;) {
    Socket socket;
    IoStatus status = acceptConnection(listener_, &socket);
    if (!status.ok()) {
      SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root %s: accept failed: %s; retrying shortly",
                address_.c_str(), strerror(status.error_number));
      accept_paused_until_ = Clock::now() + kAcceptPause;
      return;
    }
    if (!socket.valid()) return;
    if (connections_awaiting_hello_ >= kMaxConnectionsAwaitingHello) {
      SCCL_WARN(LogSubsys::Bootstrap,
                "bootstrap root %s: %zu connections have not sent a hello yet; dropping a new one",
                address_.c_str(), connections_awaiting_hello_);
      continue;  // `socket` closes it
    }
    auto connection = std::make_unique<Connection>();
    connection->socket = std::move(socket);
    connection->deadline = Clock::now() + kHelloTimeout;
    connections_.push_back(std::move(connection));
    ++connections_awaiting_hello_;
  }
}

void RootService::service(Connection& connection, short revents) {
  if (connection.closed) return;
  if (revents & POLLNVAL) {
    lostConnection(connection, {IoStatus::Kind::SystemError, EBADF});
    return;
  }
  if (revents & (POLLOUT | POLLERR | POLLHUP)) flush(connection);
  // POLLHUP and POLLERR are read too: the read reports the close or the error itself.
  if (!connection.closed && (revents & (POLLIN | POLLERR | POLLHUP))) receive(connection);
}

void RootService::receive(Connection& connection) {
  for (int read = 0; read < kMaxReadsPerWakeup && !connection.closed; ++read) {
    size_t moved = 0;
    if (connection.state == ConnState::Closing) {
      uint8_t discard[4096];
      IoStatus status = recvSome(connection.socket.fd(), discard, sizeof(discard), &moved);
      if (!status.ok()) closeNow(connection);
      if (!status.ok() || moved == 0) return;
      continue;
    }
    Bytes& inbox = connection.inbox;
    size_t have = inbox.size();
    size_t want = kHeaderBytes;
    if (have >= kHeaderBytes) want += wire::decodeHeader(inbox.data()).payload_bytes;
    inbox.resize(want);  // bounded: checkHeader vetted payload_bytes before it was used here
    IoStatus status = recvSome(connection.socket.fd(), inbox.data() + have, want - have, &moved);
    inbox.resize(have + moved);
    if (!status.ok()) {
      lostConnection(connection, status);
      return;
    }
    if (moved == 0) return;
    if (!checkFramePrefix(connection)) return;
    if (inbox.size() >= kHeaderBytes &&
        inbox.size() == kHeaderBytes + wire::decodeHeader(inbox.data()).payload_bytes) {
      dispatchFrame(connection);
    }
  }
}

void RootService::flush(Connection& connection) {
  while (!connection.outbox.empty()) {
    const Bytes& front = *connection.outbox.front();
    size_t moved = 0;
    IoStatus status = sendSome(connection.socket.fd(), front.data() + connection.outbox_offset,
                               front.size() - connection.outbox_offset, &moved);
    if (!status.ok()) {
      lostConnection(connection, status);
      return;
    }
    if (moved == 0) return;  // the socket buffer is full: POLLOUT brings us back
    connection.outbox_offset += moved;
    if (connection.outbox_offset == front.size()) {
      connection.outbox.pop_front();
      connection.outbox_offset = 0;
    }
  }
  if (connection.state == ConnState::Closing && !connection.write_shut) {
    // Half-close: the peer reads our last frames and then end-of-file, never a reset.
    shutdown(connection.socket.fd(), SHUT_WR);
    connection.write_shut = true;
  }
}

void RootService::enforceDeadlines() {
  Clock::time_point now = Clock::now();
  if (phase_ == Phase::Rendezvous && now >= rendezvous_deadline_) {
    SCCL_WARN(LogSubsys::Bootstrap,
              "bootstrap root %s: the rendezvous did not complete within %lld ms (%u of %u ranks "
              "were waiting); closing",
              address_.c_str(), static_cast<long long>(rendezvous_timeout_ms_), joined_, nranks_);
    phase_ = Phase::Done;
    return;
  }
  for (auto& connection : connections_) {
    if (connection->closed || connection->state == ConnState::Rank) continue;
    if (now < connection->deadline) continue;
    if (connection->state == ConnState::AwaitingHello) {
      SCCL_INFO(LogSubsys::Bootstrap,
                "bootstrap root %s: closing a connection that sent no complete hello in time",
                address_.c_str());
    }
    closeNow(*connection);
  }
}

void RootService::removeClosed() {
  std::erase_if(connections_, [](const auto& connection) { return connection->closed; });
  if (phase_ == Phase::Draining && connections_.empty()) phase_ = Phase::Done;
}

void RootService::queue(Connection& connection, std::shared_ptr<const Bytes> frame) {
  connection.outbox.push_back(std::move(frame));
}

void RootService::startClosing(Connection& connection) {
  if (connection.state == ConnState::AwaitingHello) --connections_awaiting_hello_;
  connection.state = ConnState::Closing;
  connection.rank = -1;
  connection.inbox.clear();
  connection.deadline = Clock::now() + kLingerTimeout;
  flush(connection);
}

void RootService::closeNow(Connection& connection) {
  if (connection.closed) return;
  if (connection.state == ConnState::AwaitingHello) --connections_awaiting_hello_;
  connection.closed = true;
  connection.socket.reset();
  connection.outbox.clear();
  connection.inbox.clear();
}

void RootService::lostConnection(Connection& connection, const IoStatus& status) {
  if (status.kind == IoStatus::Kind::SystemError) {
    SCCL_INFO(LogSubsys::Bootstrap, "bootstrap root %s: connection error: %s", address_.c_str(),
              strerror(status.error_number));
  }
  if (connection.state == ConnState::Rank) {
    rankDisconnected(connection);
  } else {
    closeNow(connection);
  }
}

}  // namespace sccl
