// The state machine of the bootstrap root (its behaviour is described in bootstrap_root.h).
// Internal to transports/bootstrap: startBootstrapRoot builds one per unique id and hands it to
// the process-wide root thread, which polls every service's sockets in one poll() call.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/socket.h"
#include "transports/bootstrap/unique_id.h"
#include "transports/bootstrap/wire.h"

namespace sccl {

// printf into a std::string (reasons sent to ranks and logged; at most 511 characters).
std::string formatText(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

class RootService {
 public:
  RootService(Socket listener, const JobToken& token, std::string address,
              int64_t rendezvous_timeout_ms);
  using Clock = std::chrono::steady_clock;

  // One turn of the event loop, driven by the root thread (bootstrap_root.cc) between which the
  // thread polls: appendPollFds adds this service's descriptors at the end of *fds;
  // handlePoll(fds) then gets a pointer to the first of them, after poll() filled revents,
  // services the ready ones and enforces the deadlines. nextDeadline bounds the poll timeout
  // (time_point::max(): none).
  void appendPollFds(std::vector<pollfd>* fds);
  void handlePoll(const pollfd* fds);
  Clock::time_point nextDeadline() const;
  // True once the job is over (see bootstrap_root.h); the service may then be destroyed.
  bool done() const { return phase_ == Phase::Done; }
  // Ends the job at once (the root thread cannot poll any more): closes every socket.
  void stop();

 private:
  enum class Phase { Rendezvous, Rounds, Draining, Done };
  enum class ConnState {
    AwaitingHello,  // connected, hello not (completely) received
    Rank,           // hello accepted: connection->rank is its rank
    Closing,        // flushing its last frames, then shutting down and closed
  };
  struct Connection {
    Socket socket;
    ConnState state = ConnState::AwaitingHello;
    int rank = -1;
    bool closed = false;
    bool write_shut = false;
    Clock::time_point deadline;  // hello (AwaitingHello) or linger (Closing) deadline
    wire::Bytes inbox;           // the frame being received: never more than one frame
    std::deque<std::shared_ptr<const wire::Bytes>> outbox;
    size_t outbox_offset = 0;  // bytes of outbox.front() already sent
    // The rank's contribution to the current round once it has arrived.
    bool contributed = false;
    uint64_t contributed_round = 0;
    wire::Bytes contribution;
  };

  // Event loop (root_service.cc).
  void acceptConnections();
  void service(Connection& connection, short revents);
  void receive(Connection& connection);
  void flush(Connection& connection);
  void enforceDeadlines();
  void removeClosed();

  // Protocol (root_protocol.cc).
  bool checkFramePrefix(Connection& connection);
  bool checkHeader(Connection& connection, const wire::FrameHeader& header);
  void dispatchFrame(Connection& connection);
  void handleHello(Connection& connection, const wire::Hello& hello);
  std::string helloProblem(const wire::Hello& hello) const;
  void registerRank(Connection& connection, const wire::Hello& hello);
  void completeRendezvous();
  void handleContribution(Connection& connection, const wire::FrameHeader& header);
  void completeRound();
  std::string roundMismatch() const;

  void reject(Connection& connection, const std::string& reason);
  void rankDisconnected(Connection& connection);
  void failJob(scclResult_t code, const std::string& reason);

  // Connection endings (root_service.cc).
  void queue(Connection& connection, std::shared_ptr<const wire::Bytes> frame);
  void startClosing(Connection& connection);
  void closeNow(Connection& connection);
  void lostConnection(Connection& connection, const IoStatus& status);

  Socket listener_;
  const JobToken token_;
  const std::string address_;  // for log lines
  const int64_t rendezvous_timeout_ms_;
  const Clock::time_point rendezvous_deadline_;
  Clock::time_point accept_paused_until_{};
  // What the last appendPollFds added: the listener (first) if polled, then these connections.
  bool polled_listener_ = false;
  std::vector<Connection*> polled_;

  Phase phase_ = Phase::Rendezvous;
  std::vector<std::unique_ptr<Connection>> connections_;
  size_t connections_awaiting_hello_ = 0;
  uint32_t nranks_ = 0;             // 0 until a rank has joined
  std::vector<Connection*> ranks_;  // by rank; null: not joined, or left
  uint32_t joined_ = 0;
  uint32_t ranks_open_ = 0;  // Rounds: ranks whose connection is still open
  int departed_rank_ = -1;   // Rounds: the first rank that disconnected
  uint64_t round_ = 0;
  uint32_t contributions_ = 0;
};

}  // namespace sccl
