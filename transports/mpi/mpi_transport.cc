// MpiTransport's lifetime, failure handling (broken state, abort, failure notices to peers),
// point-to-point messages, broadcast and barrier. The gathers and allReduce are in
// mpi_collectives.cc.
//
// Failure notices: every rank keeps one receive posted for a one-int message on kNoticeTag from
// any source. A rank whose transport breaks (timeout, MPI error, abort) sends that message to all
// others, and every wait polls the receive, so peers stuck with a failed rank get scclRemoteError
// promptly instead of each waiting out its own deadline.
#include "transports/mpi/mpi_transport.h"

#include <cstring>
#include <mutex>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "transports/collective_arguments.h"

namespace sccl {
namespace {

// Notice payloads: 0 says "aborted", any other value is the scclResult_t that broke the sender.
// Sent from this static table because a notice may still be in flight when its transport is gone.
constexpr int kNoticeAborted = 0;
constexpr int kNoticePayloads[scclNumResults] = {0, 1, 2, 3, 4, 5, 6, 7, 8};

// Memory MPI may still read or write after this transport gave up on an operation: freeing it
// could corrupt the heap, so it lives until the process exits.
void keepAliveUntilExit(std::shared_ptr<void> memory) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<void>> kept;
  std::lock_guard<std::mutex> lock(mutex);
  kept.push_back(std::move(memory));
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, const TransportSetup& setup,
                           const MpiTransportOptions& options)
    : comm_(comm),
      rank_(setup.rank),
      nranks_(setup.nranks),
      timeout_ms_(setup.timeout_ms),
      max_message_bytes_(options.max_message_bytes),
      call_memory_(std::make_unique<CallMemory>()) {
  label_ = "MPI transport";
  if (!setup.comm_name.empty()) label_ += " '" + setup.comm_name + "'";
  label_ += " rank " + std::to_string(rank_) + " of " + std::to_string(nranks_);
}

scclResult_t MpiTransport::create(MPI_Comm comm, const TransportSetup& setup, int thread_level,
                                  const MpiTransportOptions& options,
                                  std::unique_ptr<Transport>* out) {
  std::unique_ptr<MpiTransport> transport(new MpiTransport(comm, setup, options));
  int* tag_upper_bound = nullptr;
  int found = 0;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_upper_bound, &found),
                           "MPI_Comm_get_attr(MPI_TAG_UB)"));
  // The standard guarantees at least 32767; Open MPI gives INT_MAX.
  transport->max_user_tag_ = (found ? *tag_upper_bound : 32767) - kFirstUserTag;
  SCCL_CHECK(mpi::checkMpi(MPI_Irecv(&transport->notice_payload_, 1, MPI_INT, MPI_ANY_SOURCE,
                                     kNoticeTag, comm, &transport->notice_request_),
                           "MPI_Irecv (failure notices)"));
  SCCL_INFO(LogSubsys::Transport, "%s ready: thread level %s, max message %zu bytes",
            transport->label_.c_str(), mpi::threadLevelName(thread_level),
            options.max_message_bytes);
  *out = std::move(transport);
  return scclSuccess;
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    // MPI is gone: nothing can be cancelled or freed through it any more.
    SCCL_WARN(LogSubsys::Transport, "%s destroyed after MPI_Finalize", label_.c_str());
    return;
  }
  bool failed = broken_ != scclSuccess || abort_requested_.load();
  if (abort_requested_.load() && broken_ == scclSuccess) sendFailureNotices(scclSuccess);
  finishPendingSends();
  cancelNoticeReceive();
  if (!failed) {
    MPI_Comm_free(&comm_);
    return;
  }
  // After a failure, peers may still send on this communicator (a late rank joining an abandoned
  // collective, failure notices). Freeing it would let Open MPI give its context id to a later
  // communicator, which could then match those stale messages; so the communicator and the
  // memory of abandoned operations stay until MPI_Finalize.
  SCCL_INFO(LogSubsys::Transport, "%s: failed, so its MPI communicator is kept until finalize",
            label_.c_str());
  keepAliveUntilExit(std::shared_ptr<void>(std::move(call_memory_)));
}

void MpiTransport::abort() {
  abort_requested_.store(true);
}

scclResult_t MpiTransport::recordOutcome(scclResult_t result) {
  if (result == scclSuccess || result == scclInvalidArgument || broken_ != scclSuccess) {
    return result;
  }
  broken_ = result;
  broken_reason_ = threadLastError();
  if (!failure_came_from_peer_) sendFailureNotices(abort_requested_.load() ? scclSuccess : result);
  return result;
}

scclResult_t MpiTransport::checkUsable() {
  if (broken_ != scclSuccess) {
    return fail(broken_, "%s is unusable after an earlier failure: %s", label_.c_str(),
                broken_reason_.c_str());
  }
  return checkInterruptions();
}

scclResult_t MpiTransport::checkInterruptions() {
  if (abort_requested_.load()) {
    return fail(scclRemoteError, "%s was aborted by this rank", label_.c_str());
  }
  return pollFailureNotices();
}

scclResult_t MpiTransport::pollFailureNotices() {
  if (notice_request_ == MPI_REQUEST_NULL) return scclSuccess;
  int arrived = 0;
  MPI_Status status;
  SCCL_CHECK(
      mpi::checkMpi(MPI_Test(&notice_request_, &arrived, &status), "MPI_Test (failure notices)"));
  if (!arrived) return scclSuccess;
  failure_came_from_peer_ = true;
  int ints = 0;
  MPI_Get_count(&status, MPI_INT, &ints);
  int payload = notice_payload_;
  if (ints != 1 || payload < 0 || payload >= scclNumResults) {
    return fail(scclRemoteError, "%s: rank %d sent a malformed failure notice", label_.c_str(),
                status.MPI_SOURCE);
  }
  if (payload == kNoticeAborted) {
    return fail(scclRemoteError, "%s: rank %d aborted the communicator", label_.c_str(),
                status.MPI_SOURCE);
  }
  return fail(scclRemoteError, "%s: rank %d failed (%s) and gave up on the communicator",
              label_.c_str(), status.MPI_SOURCE, resultName(static_cast<scclResult_t>(payload)));
}

// reason scclSuccess stands for an abort.
void MpiTransport::sendFailureNotices(scclResult_t reason) {
  if (notices_sent_) return;
  notices_sent_ = true;
  int payload_index = reason == scclSuccess ? kNoticeAborted : static_cast<int>(reason);
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    // Best effort: a notice that cannot be sent leaves that peer to its own deadline.
    if (MPI_Isend(&kNoticePayloads[payload_index], 1, MPI_INT, peer, kNoticeTag, comm_, &request) ==
        MPI_SUCCESS) {
      MPI_Request_free(&request);
    }
  }
}

scclResult_t MpiTransport::waitAll(std::vector<MPI_Request>& requests,
                                   std::vector<MPI_Status>* statuses, const char* operation) {
  if (requests.empty()) return scclSuccess;
  mpi::WaitInterrupt interrupt = [this] { return checkInterruptions(); };
  mpi::WaitSpec spec{operation, label_.c_str(), timeout_ms_, &interrupt};
  if (statuses != nullptr) statuses->resize(requests.size());
  return mpi::waitForRequests(requests.data(), statuses ? statuses->data() : nullptr,
                              static_cast<int>(requests.size()), spec);
}

void MpiTransport::finishPendingSends() {
  if (pending_sends_.empty()) return;
  std::vector<MPI_Request> requests;
  for (PendingSend& pending : pending_sends_) {
    requests.insert(requests.end(), pending.requests.begin(), pending.requests.end());
  }
  // A healthy transport lets its last messages leave (bounded by the deadline); a broken or
  // aborted one must not block.
  bool delivered = false;
  if (broken_ == scclSuccess && !abort_requested_.load()) {
    mpi::WaitSpec spec{"delivery of pending sends at destruction", label_.c_str(), timeout_ms_,
                       nullptr};
    delivered = mpi::waitForRequests(requests.data(), nullptr, static_cast<int>(requests.size()),
                                     spec) == scclSuccess;
  }
  if (!delivered) {
    SCCL_WARN(LogSubsys::Transport, "%s: %zu sends undelivered at destruction; kept until exit",
              label_.c_str(), pending_sends_.size());
    keepAliveUntilExit(std::make_shared<std::vector<PendingSend>>(std::move(pending_sends_)));
  }
  pending_sends_.clear();
}

void MpiTransport::cancelNoticeReceive() {
  if (notice_request_ == MPI_REQUEST_NULL) return;
  // Cancelling a receive is local, and waiting for a cancelled receive cannot block.
  MPI_Cancel(&notice_request_);
  MPI_Wait(&notice_request_, MPI_STATUS_IGNORE);
}

// ---- point-to-point ------------------------------------------------------------------------

scclResult_t MpiTransport::validatePointToPoint(const char* operation, const void* buf,
                                                size_t bytes, int peer, int tag) const {
  SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks_, "%s: peer %d out of range [0, %d)", operation, peer,
                   nranks_);
  SCCL_REQUIRE_ARG(tag >= 0 && tag <= max_user_tag_,
                   "%s: tag %d out of the MPI transport's range [0, %d]", operation, tag,
                   max_user_tag_);
  SCCL_REQUIRE_ARG(buf != nullptr || bytes == 0, "%s: buffer is NULL but bytes is %zu", operation,
                   bytes);
  return scclSuccess;
}

scclResult_t MpiTransport::reapCompletedSends() {
  size_t kept = 0;
  for (size_t i = 0; i < pending_sends_.size(); ++i) {
    PendingSend& pending = pending_sends_[i];
    int done = 0;
    SCCL_CHECK(mpi::checkMpi(MPI_Testall(static_cast<int>(pending.requests.size()),
                                         pending.requests.data(), &done, MPI_STATUSES_IGNORE),
                             "send (MPI_Isend)"));
    if (!done) {
      if (kept != i) pending_sends_[kept] = std::move(pending);
      ++kept;
    }
  }
  pending_sends_.resize(kept);
  return scclSuccess;
}

scclResult_t MpiTransport::send(const void* buf, size_t bytes, int peer, int tag) {
  return guarded([&] { return runSend(buf, bytes, peer, tag); });
}

scclResult_t MpiTransport::runSend(const void* buf, size_t bytes, int peer, int tag) {
  SCCL_CHECK(validatePointToPoint("send", buf, bytes, peer, tag));
  SCCL_CHECK(reapCompletedSends());
  PendingSend& pending = pending_sends_.emplace_back();
  pending.data.resize(bytes);
  if (bytes > 0) std::memcpy(pending.data.data(), buf, bytes);
  size_t pieces = mpi::pieceCount(bytes, max_message_bytes_);
  pending.requests.assign(pieces, MPI_REQUEST_NULL);
  for (size_t i = 0; i < pieces; ++i) {
    int piece_bytes = static_cast<int>(mpi::pieceBytes(bytes, max_message_bytes_, i));
    SCCL_CHECK(mpi::checkMpi(
        MPI_Isend(pending.data.data() + mpi::pieceOffset(i, max_message_bytes_), piece_bytes,
                  MPI_BYTE, peer, kFirstUserTag + tag, comm_, &pending.requests[i]),
        "send (MPI_Isend)"));
  }
  return scclSuccess;
}

scclResult_t MpiTransport::recv(void* buf, size_t bytes, int peer, int tag) {
  return guarded([&] { return runRecv(buf, bytes, peer, tag); });
}

scclResult_t MpiTransport::runRecv(void* buf, size_t bytes, int peer, int tag) {
  SCCL_CHECK(validatePointToPoint("recv", buf, bytes, peer, tag));
  auto* out = static_cast<std::byte*>(buf);
  size_t pieces = mpi::pieceCount(bytes, max_message_bytes_);
  std::vector<MPI_Request> requests(pieces, MPI_REQUEST_NULL);
  for (size_t i = 0; i < pieces; ++i) {
    int piece_bytes = static_cast<int>(mpi::pieceBytes(bytes, max_message_bytes_, i));
    SCCL_CHECK(mpi::checkMpi(MPI_Irecv(out + mpi::pieceOffset(i, max_message_bytes_), piece_bytes,
                                       MPI_BYTE, peer, kFirstUserTag + tag, comm_, &requests[i]),
                             "recv (MPI_Irecv)"));
  }
  std::vector<MPI_Status> statuses;
  SCCL_CHECK(waitAll(requests, &statuses, "recv"));
  for (size_t i = 0; i < pieces; ++i) {
    int received = 0;
    MPI_Get_count(&statuses[i], MPI_BYTE, &received);
    if (static_cast<size_t>(received) != mpi::pieceBytes(bytes, max_message_bytes_, i)) {
      return fail(scclInvalidUsage,
                  "%s: recv of %zu bytes from rank %d (tag %d) matched a shorter send",
                  label_.c_str(), bytes, peer, tag);
    }
  }
  return scclSuccess;
}

// ---- broadcast and barrier -----------------------------------------------------------------

scclResult_t MpiTransport::broadcast(void* buf, size_t bytes, int root) {
  return guarded([&] { return runBroadcast(buf, bytes, root); });
}

scclResult_t MpiTransport::runBroadcast(void* buf, size_t bytes, int root) {
  SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks_));
  if (bytes == 0 || nranks_ == 1) return scclSuccess;
  // Pieces are independent broadcasts from the same root; all are posted at once and MPI matches
  // them in order.
  auto* data = static_cast<std::byte*>(buf);
  size_t pieces = mpi::pieceCount(bytes, max_message_bytes_);
  std::vector<MPI_Request> requests(pieces, MPI_REQUEST_NULL);
  for (size_t i = 0; i < pieces; ++i) {
    int piece_bytes = static_cast<int>(mpi::pieceBytes(bytes, max_message_bytes_, i));
    SCCL_CHECK(mpi::checkMpi(MPI_Ibcast(data + mpi::pieceOffset(i, max_message_bytes_), piece_bytes,
                                        MPI_BYTE, root, comm_, &requests[i]),
                             "broadcast (MPI_Ibcast)"));
  }
  return waitAll(requests, nullptr, "broadcast");
}

scclResult_t MpiTransport::barrier() {
  return guarded([&] {
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    SCCL_CHECK(mpi::checkMpi(MPI_Ibarrier(comm_, &requests[0]), "barrier (MPI_Ibarrier)"));
    return waitAll(requests, nullptr, "barrier");
  });
}

}  // namespace sccl
