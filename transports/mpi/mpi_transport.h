// The MPI transport: the Transport contract (transports/transport.h) over a private MPI
// communicator, with only non-blocking MPI operations polled under the communicator's deadline.
// Collectives use MPI's non-blocking collectives while every count fits one MPI call and direct
// point-to-point exchanges in pieces otherwise; allReduce reduces on the owner of each chunk with
// reduceInRankOrder so that results are bitwise those of every other transport. How it works, the
// bytes on the wire and what MPI cannot do: docs/transports/mpi.md.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "transports/mpi/mpi_message_split.h"
#include "transports/mpi/mpi_support.h"
#include "transports/mpi/mpi_transport_create.h"
#include "transports/transport_registry.h"

namespace sccl {

struct MpiTransportOptions {
  // Largest count or displacement, in bytes, given to one MPI call (1..INT_MAX); larger transfers
  // are cut into pieces. Tests lower it to run the large-transfer paths on small buffers.
  size_t max_message_bytes = mpi::kDefaultMaxMessageBytes;
};

// createMpiTransport (mpi_transport_create.h) with non-default options.
scclResult_t createMpiTransportWithOptions(const TransportSetup& setup,
                                           const MpiTransportOptions& options,
                                           std::unique_ptr<Transport>* out);

class MpiTransport final : public Transport {
 public:
  // Takes ownership of `comm` (an intra-communicator with MPI_ERRORS_RETURN set, whose rank and
  // size are setup.rank and setup.nranks), also when it fails. thread_level is what MPI provides
  // (for the log).
  static scclResult_t create(MPI_Comm comm, const TransportSetup& setup, int thread_level,
                             const MpiTransportOptions& options, std::unique_ptr<Transport>* out);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  const char* name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities caps;
    caps.one_sided = true;
    return caps;
  }

  scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) override;
  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override;
  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         ReduceOp op) override;
  // Steps 1 and 2 of allReduce with rank r owning block r (mpi_collectives.cc).
  scclResult_t reduceScatter(const void* send, void* recv, size_t recvcount, scclDataType_t dtype,
                             ReduceOp op) override;
  scclResult_t broadcast(void* buf, size_t bytes, int root) override;
  // Copies the message and returns once it is posted, so a send never waits for its receive.
  scclResult_t send(const void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t recv(void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t barrier() override;
  // MPI_Win_allocate over the transport's communicator (mpi_window.cc).
  scclResult_t createWindow(size_t bytes, std::unique_ptr<Window>* out) override;
  // Only sets a flag: MPI is called solely from the thread that uses the transport, which sends
  // the abort notices to the peers in its current wait, its next operation or the destructor.
  void abort() override;

  // Tags 0..maxUserTag() are available to send/recv.
  int maxUserTag() const { return max_user_tag_; }

 private:
  // Tags of the private communicator: the collectives' point-to-point pieces, failure notices,
  // and send/recv's tags shifted past both, so that no user tag can match an internal message.
  static constexpr int kCollectiveTag = 0;
  static constexpr int kNoticeTag = 1;
  static constexpr int kFirstUserTag = 2;

  // One direction of a point-to-point leg of a collective's fallback path.
  struct PeerTransfer {
    int peer;
    const std::byte* send;
    size_t send_bytes;
    std::byte* recv;
    size_t recv_bytes;
  };
  // A send() copy in flight: MPI reads `data` until every request completes.
  struct PendingSend {
    std::vector<std::byte> data;
    std::vector<MPI_Request> requests;
  };
  // Memory MPI reads or writes during a collective. After a timeout MPI may still use it, so it
  // is then kept alive until the process exits instead of being freed.
  struct CallMemory {
    std::vector<std::byte> scratch;
    std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  };

  MpiTransport(MPI_Comm comm, const TransportSetup& setup, const MpiTransportOptions& options);

  // Runs an operation unless the transport is already broken, and breaks it when the operation
  // fails with anything but an invalid argument.
  template <typename Operation>
  scclResult_t guarded(Operation&& operation) {
    scclResult_t result = checkUsable();
    if (result == scclSuccess) result = operation();
    return recordOutcome(result);
  }

  // Failure handling (mpi_transport.cc).
  scclResult_t recordOutcome(scclResult_t result);
  scclResult_t checkUsable();
  scclResult_t checkInterruptions();
  scclResult_t pollFailureNotices();
  void sendFailureNotices(scclResult_t reason);
  scclResult_t waitAll(std::vector<MPI_Request>& requests, std::vector<MPI_Status>* statuses,
                       const char* operation);
  void finishPendingSends();
  void cancelNoticeReceive();

  // Operation bodies (mpi_transport.cc, mpi_collectives.cc).
  scclResult_t validatePointToPoint(const char* operation, const void* buf, size_t bytes, int peer,
                                    int tag) const;
  scclResult_t reapCompletedSends();
  scclResult_t runSend(const void* buf, size_t bytes, int peer, int tag);
  scclResult_t runRecv(void* buf, size_t bytes, int peer, int tag);
  scclResult_t runBroadcast(void* buf, size_t bytes, int root);
  scclResult_t runAllGather(const void* send, void* recv, size_t bytes_per_rank);
  scclResult_t runAllGatherV(const void* send, size_t send_bytes, void* recv,
                             const size_t* recv_bytes, const size_t* recv_offsets);
  scclResult_t runAllReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                            ReduceOp op);
  scclResult_t runReduceScatter(const void* send, void* recv, size_t recvcount,
                                scclDataType_t dtype, ReduceOp op);
  // chunks[r]: the elements rank r owns; each rank's copy of them lands in scratch slot `rank`.
  scclResult_t scatterChunksToOwners(const std::byte* send,
                                     const std::vector<mpi::ChunkRange>& chunks,
                                     size_t element_bytes, const char* operation);
  // Reduces the n copies in scratch into out (this rank's chunk of `chunks`).
  void reduceOwnedChunk(const std::vector<mpi::ChunkRange>& chunks, std::byte* out,
                        scclDataType_t dtype, ReduceOp op);
  scclResult_t gatherReducedChunks(std::byte* recv, size_t count, size_t element_bytes);
  scclResult_t runCreateWindow(size_t bytes, std::unique_ptr<Window>* out);
  scclResult_t exchangeWithPeers(const std::vector<PeerTransfer>& transfers, const char* operation);

  MPI_Comm comm_;
  int rank_;
  int nranks_;
  int64_t timeout_ms_;
  size_t max_message_bytes_;
  int max_user_tag_ = 0;
  std::string label_;  // "MPI transport '<name>' rank r of n", for messages

  scclResult_t broken_ = scclSuccess;  // the failure that broke the transport
  std::string broken_reason_;
  bool failure_came_from_peer_ = false;  // a peer's notice: no need to notify the others again
  bool notices_sent_ = false;
  std::atomic<bool> abort_requested_{false};

  MPI_Request notice_request_ = MPI_REQUEST_NULL;  // receives any peer's failure notice
  int notice_payload_ = 0;
  std::unique_ptr<CallMemory> call_memory_;
  std::vector<PendingSend> pending_sends_;
};

}  // namespace sccl
