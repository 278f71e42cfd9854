// The UCX transport: the Transport contract (transports/transport.h) over UCP, for processes
// launched by anything (mpirun, the unique-id bootstrap alone, a job scheduler).
//
// One UCP context and one worker per communicator (UCS_THREAD_MODE_SERIALIZED: only the thread
// using the transport calls UCX; abort() from another thread only sets a flag). Set-up exchanges
// the workers' addresses through the bootstrap and connects an endpoint to every rank, this one
// included. Collectives are built on tagged sends and receives (ucx_collectives.cc), one-sided
// windows on ucp_mem_map, packed remote keys and put/atomic-swap/flush (ucx_window.cc). Every
// wait polls the worker, yields the core when nothing moved, and honours the communicator's
// deadline (ucx_wait.cc). How it works, what goes on the wire and its settings:
// docs/transports/ucx.md.
//
// Failure detection: endpoints to ranks on other hosts use UCP_ERR_HANDLING_MODE_PEER, so a dead
// peer reaches the error callback. UCX's shared-memory transports cannot report a peer failure,
// so ranks on this host are connected without error handling and watched through the process
// table instead (pid and start time exchanged at set-up). A rank whose transport breaks sends a
// failure notice to every other rank, which its peers' waits turn into scclRemoteError.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "transports/transport_registry.h"
#include "transports/ucx/ucx_peer_info.h"

namespace sccl {

// Entry point for the registry: a UCX transport over the ranks of setup.bootstrap.
scclResult_t createUcxTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out);

class UcxTransport final : public Transport {
 public:
  friend scclResult_t createUcxTransport(const TransportSetup& setup,
                                         std::unique_ptr<Transport>* out);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  const char* name() const override { return "ucx"; }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities caps;
    caps.one_sided = true;
    return caps;  // host memory only: Debian's UCX has no CUDA memory type (ucx_setup.cc)
  }

  scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) override;
  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override;
  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         ReduceOp op) override;
  // allReduceByOwners' first step with rank r owning block r (ucx_collectives.cc).
  scclResult_t reduceScatter(const void* send, void* recv, size_t recvcount, scclDataType_t dtype,
                             ReduceOp op) override;
  scclResult_t broadcast(void* buf, size_t bytes, int root) override;
  // Copies the message and returns once it is posted, so a send never waits for its receive.
  scclResult_t send(const void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t recv(void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t barrier() override;
  scclResult_t createWindow(size_t bytes, std::unique_ptr<Window>* out) override;
  void abort() override;

  // ---- for the window (ucx_window.cc) and the collectives -------------------------------------

  // One non-blocking UCX operation this transport waits for.
  struct Op {
    void* request = nullptr;  // UCX request; null once completed (or completed immediately)
    bool done = false;
    ucs_status_t status = UCS_OK;
    size_t received = 0;      // receives: bytes that arrived
    size_t expected = 0;      // receives: bytes asked for
    uint64_t sender_tag = 0;  // receives: the tag that matched
    int peer = 0;
    bool is_recv = false;
  };
  // The ops of one call. They live in a std::deque so that their addresses (the completion
  // callbacks' user data) stay fixed; whatever is still in flight when the list goes away (an
  // early error return) is abandoned first, so that no callback writes into freed memory.
  class Ops {
   public:
    explicit Ops(UcxTransport* owner) : owner_(owner) {}
    ~Ops() { owner_->abandon(*this); }
    Ops(const Ops&) = delete;
    Ops& operator=(const Ops&) = delete;
    Op& emplace_back() { return list_.emplace_back(); }
    Op& back() { return list_.back(); }
    Op& operator[](size_t i) { return list_[i]; }
    size_t size() const { return list_.size(); }
    bool empty() const { return list_.empty(); }
    std::deque<Op>::iterator begin() { return list_.begin(); }
    std::deque<Op>::iterator end() { return list_.end(); }
    void clear() {
      owner_->abandon(*this);
      list_.clear();
    }

   private:
    UcxTransport* owner_;
    std::deque<Op> list_;
  };

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  ucp_ep_h endpoint(int peer) const { return peers_[static_cast<size_t>(peer)].ep; }
  const std::string& label() const { return label_; }

  // Runs an operation unless the transport is already broken, and breaks it when the operation
  // fails with anything but an invalid argument.
  template <typename Operation>
  scclResult_t guarded(Operation&& operation) {
    scclResult_t result = checkUsable();
    if (result == scclSuccess) result = operation();
    return recordOutcome(result);
  }

  // Tracks a status pointer returned by a UCX *_nbx call (with this transport's callbacks) in
  // `ops`; an error status fails at once.
  scclResult_t track(Ops& ops, ucs_status_ptr_t status, int peer, bool is_recv, size_t expected,
                     const char* what);
  // Completes every op (polling the worker), under the deadline and the failure checks. Receives
  // shorter or longer than expected are scclInvalidUsage.
  scclResult_t waitOps(Ops& ops, const char* what);
  // The parameters of a tagged send or receive whose completion lands in `op`.
  static void prepareSend(ucp_request_param_t* param, Op* op);
  static void prepareRecv(ucp_request_param_t* param, Op* op);
  static void prepareOther(ucp_request_param_t* param, Op* op);  // RMA, atomics, flush

  // Tags of the internal collectives: (sequence of the collective, step within it).
  uint64_t collectiveTag(int source, uint64_t sequence, uint32_t step) const;
  uint64_t nextSequence() { return ++sequence_; }
  // Posts a tagged send of `bytes` at `data` to `peer` / a receive from `source`, adding the op.
  scclResult_t postSend(Ops& ops, const void* data, size_t bytes, int peer, uint64_t tag);
  scclResult_t postRecv(Ops& ops, void* data, size_t bytes, int source, uint64_t tag);

  scclResult_t recordOutcome(scclResult_t result);
  scclResult_t checkUsable();
  // Releases every request of `ops` (receives cancelled) without further callbacks.
  void abandon(Ops& ops);
  // Progresses the worker once (the target side of one-sided traffic needs it).
  void progressOnce();
  // Takes over memory that an abandoned operation may still touch (a window's swap words, its
  // remote keys and mapped memory) and releases it after the endpoints are closed, when no UCX
  // operation can reach it any more.
  void keepUntilClosed(std::shared_ptr<void> resource) {
    kept_until_closed_.push_back(std::move(resource));
  }
  bool broken() const { return broken_ != scclSuccess; }
  int64_t timeoutMs() const { return timeout_ms_; }

 private:
  struct Peer {
    ucp_ep_h ep = nullptr;
    ucx::PeerInfo info;
    bool same_host = false;         // watched through the process table
    ucs_status_t failure = UCS_OK;  // set by the endpoint's error callback
    UcxTransport* owner = nullptr;
  };

  UcxTransport(const TransportSetup& setup);
  scclResult_t setUp(const TransportSetup& setup);
  scclResult_t exchangeAddresses(const TransportSetup& setup, std::vector<ucx::PeerInfo>* peers,
                                 std::vector<std::vector<uint8_t>>* addresses);
  scclResult_t connectEndpoints(const std::vector<std::vector<uint8_t>>& addresses);
  scclResult_t postNoticeReceive();
  void closeEndpoints(bool force);

  // Failure handling (ucx_wait.cc).
  scclResult_t checkInterruptions();
  scclResult_t checkPeersAlive();
  // To every rank but this one and `origin` (the rank that failed: this one, or the one whose
  // notice this rank forwards); reason scclSuccess stands for an abort. Once per transport.
  void sendFailureNotices(scclResult_t reason, int origin);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  // Operation bodies (ucx_transport.cc, ucx_collectives.cc).
  scclResult_t validatePointToPoint(const char* operation, const void* buf, size_t bytes, int peer,
                                    int tag) const;
  scclResult_t reapCompletedSends();
  scclResult_t runSend(const void* buf, size_t bytes, int peer, int tag);
  scclResult_t runRecv(void* buf, size_t bytes, int peer, int tag);
  scclResult_t runBroadcast(void* buf, size_t bytes, int root);
  scclResult_t runBarrier();
  scclResult_t runAllGatherV(const void* send, size_t send_bytes, void* recv,
                             const size_t* recv_bytes, const size_t* recv_offsets,
                             const char* operation);
  scclResult_t runAllReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                            ReduceOp op);
  scclResult_t allReduceByGather(const void* send, void* recv, size_t count, scclDataType_t dtype,
                                 ReduceOp op);
  scclResult_t allReduceByOwners(const void* send, void* recv, size_t count, scclDataType_t dtype,
                                 ReduceOp op);
  scclResult_t runReduceScatter(const void* send, void* recv, size_t recvcount,
                                scclDataType_t dtype, ReduceOp op);
  scclResult_t runCreateWindow(size_t bytes, std::unique_ptr<Window>* out);

  // Working memory of allReduce, kept between calls: allocating (and zeroing) tens of MiB per
  // call costs page faults comparable to the transfer itself. UCX may still write into it after
  // an abandoned call, so it lives as long as the worker.
  std::byte* scratch(size_t bytes);
  std::unique_ptr<std::byte[]> scratch_;
  size_t scratch_bytes_ = 0;

  int rank_;
  int nranks_;
  int64_t timeout_ms_;
  std::string label_;  // "UCX transport '<name>' rank r of n", for messages
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<Peer> peers_;
  uint64_t sequence_ = 0;  // collectives issued; every rank counts the same

  scclResult_t broken_ = scclSuccess;
  std::string broken_reason_;
  bool failure_came_from_peer_ = false;
  bool notices_sent_ = false;
  std::atomic<bool> abort_requested_{false};
  std::chrono::steady_clock::time_point next_liveness_check_{};

  // The posted receive for failure notices from any rank.
  Op notice_op_;
  uint32_t notice_payload_ = 0;
  // The notice received: the rank that failed (-1: none, or a malformed one) and its code.
  int notice_origin_ = -1;
  scclResult_t notice_code_ = scclSuccess;
  uint32_t notice_out_payload_ = 0;  // what this rank sends (sendFailureNotices)

  // A send() copy in flight: UCX reads `data` until the op completes.
  struct PendingSend {
    explicit PendingSend(UcxTransport* owner) : ops(owner) {}
    std::vector<std::byte> data;
    Ops ops;
  };
  std::deque<PendingSend> pending_sends_;
  std::vector<std::shared_ptr<void>> kept_until_closed_;
};

}  // namespace sccl
