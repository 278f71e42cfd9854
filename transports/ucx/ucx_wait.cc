// How the UCX transport waits: operations, progress, deadline, and failure handling.
//
// Every non-blocking UCX call gets a completion callback that fills an Op. waitOps polls
// ucp_worker_progress until all ops of a call are complete; when a poll moved nothing it yields
// the core (sched_yield, and after a long idle stretch a 50 us sleep), because busy polling on
// oversubscribed cores starves the peers and the kernel's network processing alike (see
// docs/transports/ucx.md). Between polls it checks, in this order: an abort() from another
// thread, a failure notice from a peer, an endpoint error reported by UCX, the liveness of peers
// on this host (every 100 ms, through /proc), and the deadline. Any of these abandons the ops:
// receives are cancelled and every request is released without further callbacks.
//
// Failure notices: every rank keeps one receive posted for a 4-byte message of kind "notice"
// from any rank. A rank whose transport breaks sends it to all others (best effort, progressing
// the sends for at most a second), so peers blocked with it get scclRemoteError promptly instead
// of their deadline. A rank that learns of a failure from a notice forwards it, once, to every
// rank but the one that failed: a notice the failing rank could not deliver (8 ranks on 2 busy
// cores: one rank then waited 20 s for its deadline in a CI run) reaches that peer through the
// others. The payload names the rank that failed (origin) and why: (origin << 8) | code, code 0
// for an abort, else the scclResult_t that broke it.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/patient_wait.h"
#include "transports/ucx/ucx_transport.h"

namespace sccl {
namespace {

constexpr int kNoticeOriginShift = 8;
constexpr uint32_t kNoticeCodeMask = 0xffu;

constexpr uint64_t kKindCollective = 0, kKindUser = 1, kKindNotice = 2;
constexpr int kSourceShift = 40;  // source rank: bits 40..61

void onSendDone(void* /*request*/, ucs_status_t status, void* user_data) {
  auto* op = static_cast<UcxTransport::Op*>(user_data);
  op->status = status;
  op->done = true;
}

void onRecvDone(void* /*request*/, ucs_status_t status, const ucp_tag_recv_info_t* info,
                void* user_data) {
  auto* op = static_cast<UcxTransport::Op*>(user_data);
  op->status = status;
  op->received = info != nullptr ? info->length : 0;
  op->sender_tag = info != nullptr ? info->sender_tag : 0;
  op->done = true;
}

}  // namespace

// ---- tags ------------------------------------------------------------------------------------
// bits 62..63 kind, 40..61 source rank; collectives: 16..39 sequence (mod 2^24), 0..15 step;
// user messages: 0..31 the user's tag. Tag matching keeps messages of one sender and tag in
// order, so wrapped sequence numbers cannot be confused (2^24 collectives never overlap).

uint64_t UcxTransport::collectiveTag(int source, uint64_t sequence, uint32_t step) const {
  return (kKindCollective << 62) | (static_cast<uint64_t>(source) << kSourceShift) |
         ((sequence & 0xffffffu) << 16) | (step & 0xffffu);
}

static uint64_t userTag(int source, int tag) {
  return (kKindUser << 62) | (static_cast<uint64_t>(source) << kSourceShift) |
         static_cast<uint32_t>(tag);
}

// ---- ops -------------------------------------------------------------------------------------

void UcxTransport::prepareSend(ucp_request_param_t* param, Op* op) {
  *param = ucp_request_param_t{};
  param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param->cb.send = onSendDone;
  param->user_data = op;
}

void UcxTransport::prepareRecv(ucp_request_param_t* param, Op* op) {
  *param = ucp_request_param_t{};
  // NO_IMM_CMPL: a message already in the unexpected queue would otherwise complete the receive
  // at once with no callback, and so no received length to check against the expected one.
  param->op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param->cb.recv = onRecvDone;
  param->user_data = op;
}

void UcxTransport::prepareOther(ucp_request_param_t* param, Op* op) {
  prepareSend(param, op);
}

scclResult_t UcxTransport::track(Ops& ops, ucs_status_ptr_t status, int peer, bool is_recv,
                                 size_t expected, const char* what) {
  Op& op = ops.back();
  op.peer = peer;
  op.is_recv = is_recv;
  op.expected = expected;
  if (UCS_PTR_IS_ERR(status)) {
    op.done = true;
    op.status = UCS_PTR_STATUS(status);
    if (op.status == UCS_ERR_MESSAGE_TRUNCATED) {
      return fail(scclInvalidUsage,
                  "%s: %s: a message from rank %d and its receive have different sizes "
                  "(receive of %zu bytes)",
                  label_.c_str(), what, peer, expected);
    }
    return fail(scclSystemError, "%s: %s with rank %d failed: %s", label_.c_str(), what, peer,
                ucs_status_string(op.status));
  }
  if (status == nullptr) {
    // Completed immediately: sends only (receives are posted with NO_IMM_CMPL and always return
    // a request, whose callback reports the received length).
    if (is_recv) {
      op.done = true;
      op.status = UCS_ERR_NO_MESSAGE;
      return fail(scclSystemError, "%s: %s from rank %d completed without reporting its length",
                  label_.c_str(), what, peer);
    }
    op.done = true;
    op.received = expected;
  } else {
    op.request = status;
  }
  return scclSuccess;
}

scclResult_t UcxTransport::postSend(Ops& ops, const void* data, size_t bytes, int peer,
                                    uint64_t tag) {
  Op& op = ops.emplace_back();
  ucp_request_param_t param;
  prepareSend(&param, &op);
  ucs_status_ptr_t status = ucp_tag_send_nbx(endpoint(peer), data, bytes, tag, &param);
  return track(ops, status, peer, false, bytes, "tagged send");
}

scclResult_t UcxTransport::postRecv(Ops& ops, void* data, size_t bytes, int source, uint64_t tag) {
  Op& op = ops.emplace_back();
  ucp_request_param_t param;
  prepareRecv(&param, &op);
  ucs_status_ptr_t status = ucp_tag_recv_nbx(worker_, data, bytes, tag, ~uint64_t{0}, &param);
  return track(ops, status, source, true, bytes, "tagged receive");
}

void UcxTransport::progressOnce() {
  ucp_worker_progress(worker_);
}

scclResult_t UcxTransport::waitOps(Ops& ops, const char* what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::milliseconds(timeout_ms_);
  size_t first_pending = 0;
  unsigned idle_polls = 0, busy_polls = 0;
  while (true) {
    while (first_pending < ops.size() && ops[first_pending].done) ++first_pending;
    if (first_pending == ops.size()) break;
    // Busy polls skip the checks below, but never for long: traffic that keeps the worker busy
    // must not hide a deadline or a dead peer.
    if (ucp_worker_progress(worker_) != 0 && (++busy_polls & 1023) != 0) {
      idle_polls = 0;
      continue;
    }
    // Nothing moved: look for reasons to stop, then let others have the core.
    scclResult_t interrupted = checkInterruptions();
    if (interrupted == scclSuccess && Clock::now() > deadline) {
      interrupted =
          fail(scclTimeout, "%s: %s did not complete within %lld ms (waiting for rank %d)",
               label_.c_str(), what, static_cast<long long>(timeout_ms_), ops[first_pending].peer);
    }
    if (interrupted != scclSuccess) {
      abandon(ops);
      return interrupted;
    }
    if (++idle_polls < 2000) {
      pauseBetweenPolls(start);  // a yield, or a sleep in a wait known to be long
    } else {
      usleep(50);
    }
  }
  scclResult_t result = scclSuccess;
  for (Op& op : ops) {
    if (op.request != nullptr) {
      ucp_request_free(op.request);
      op.request = nullptr;
    }
    if (result != scclSuccess) continue;
    if (op.status == UCS_ERR_MESSAGE_TRUNCATED ||
        (op.status == UCS_OK && op.is_recv && op.received != op.expected)) {
      result = fail(scclInvalidUsage,
                    "%s: %s: a message from rank %d and its receive have different sizes "
                    "(receive of %zu bytes)",
                    label_.c_str(), what, op.peer, op.expected);
    } else if (op.status != UCS_OK) {
      bool peer_gone = op.status == UCS_ERR_CONNECTION_RESET ||
                       op.status == UCS_ERR_ENDPOINT_TIMEOUT || op.status == UCS_ERR_UNREACHABLE ||
                       op.status == UCS_ERR_CANCELED;
      result = fail(peer_gone ? scclRemoteError : scclSystemError, "%s: %s with rank %d failed: %s",
                    label_.c_str(), what, op.peer, ucs_status_string(op.status));
    }
  }
  return result;
}

void UcxTransport::abandon(Ops& ops) {
  for (Op& op : ops) {
    if (op.request == nullptr) continue;
    if (op.is_recv && !op.done) ucp_request_cancel(worker_, op.request);
    // No callback runs after this, so `op` may go away.
    ucp_request_free(op.request);
    op.request = nullptr;
    op.done = true;
  }
}

// ---- failure handling ----------------------------------------------------------------------

void UcxTransport::onEndpointError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  if (peer->failure == UCS_OK) peer->failure = status;
}

scclResult_t UcxTransport::recordOutcome(scclResult_t result) {
  if (result == scclSuccess || result == scclInvalidArgument || broken_ != scclSuccess) {
    return result;
  }
  broken_ = result;
  broken_reason_ = threadLastError();
  if (worker_ == nullptr) return result;
  if (!failure_came_from_peer_) {
    sendFailureNotices(abort_requested_.load() ? scclSuccess : result, rank_);
  } else if (notice_origin_ >= 0) {
    sendFailureNotices(notice_code_, notice_origin_);  // forwarded (see the top of this file)
  }
  return result;
}

scclResult_t UcxTransport::checkUsable() {
  if (broken_ != scclSuccess) {
    return fail(broken_, "%s is unusable after an earlier failure: %s", label_.c_str(),
                broken_reason_.c_str());
  }
  // Take in what has arrived (bounded), so that a failure notice that came while this rank was
  // away is seen before stale messages of an abandoned collective could complete this one.
  for (int i = 0; i < 64 && worker_ != nullptr && ucp_worker_progress(worker_) != 0; ++i) {
  }
  return checkInterruptions();
}

scclResult_t UcxTransport::checkInterruptions() {
  if (abort_requested_.load()) {
    return fail(scclRemoteError, "%s was aborted by this rank", label_.c_str());
  }
  if (notice_op_.done) {
    failure_came_from_peer_ = true;
    uint64_t sender = (notice_op_.sender_tag >> kSourceShift) & 0x3fffffu;
    if (sender >= static_cast<uint64_t>(nranks_)) {
      return fail(scclRemoteError, "%s: a failure notice names rank %llu of %d", label_.c_str(),
                  static_cast<unsigned long long>(sender), nranks_);
    }
    const int notice_sender = static_cast<int>(sender);
    const uint32_t payload = notice_payload_;
    const uint32_t code = payload & kNoticeCodeMask;
    const uint32_t origin = payload >> kNoticeOriginShift;
    if (notice_op_.status != UCS_OK || notice_op_.received != sizeof(notice_payload_) ||
        code >= scclNumResults || origin >= static_cast<uint32_t>(nranks_) ||
        origin == static_cast<uint32_t>(rank_)) {
      // (A notice naming this rank as the one that failed cannot be honest: nobody forwards a
      // notice to the rank it names, and this rank, had it failed, would not be waiting.)
      return fail(scclRemoteError, "%s: rank %d sent a malformed failure notice", label_.c_str(),
                  notice_sender);
    }
    notice_origin_ = static_cast<int>(origin);
    notice_code_ = static_cast<scclResult_t>(code);
    char forwarded[48] = "";
    if (notice_origin_ != notice_sender)
      std::snprintf(forwarded, sizeof(forwarded), " (notice forwarded by rank %d)", notice_sender);
    if (code == 0) {
      return fail(scclRemoteError, "%s: rank %d aborted the communicator%s", label_.c_str(),
                  notice_origin_, forwarded);
    }
    return fail(scclRemoteError, "%s: rank %d failed (%s) and gave up on the communicator%s",
                label_.c_str(), notice_origin_, resultName(notice_code_), forwarded);
  }
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (peers_[r].failure != UCS_OK) {
      return fail(scclRemoteError, "%s: the connection to rank %zu failed: %s", label_.c_str(), r,
                  ucs_status_string(peers_[r].failure));
    }
  }
  return checkPeersAlive();
}

scclResult_t UcxTransport::checkPeersAlive() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_liveness_check_) return scclSuccess;
  next_liveness_check_ = now + std::chrono::milliseconds(100);
  for (size_t r = 0; r < peers_.size(); ++r) {
    const Peer& peer = peers_[r];
    if (!peer.same_host || static_cast<int>(r) == rank_) continue;
    std::string state;
    if (!ucx::processAlive(peer.info, &state)) {
      return fail(scclRemoteError, "%s: rank %zu (pid %d on this host) %s", label_.c_str(), r,
                  static_cast<int>(peer.info.pid), state.c_str());
    }
  }
  return scclSuccess;
}

// reason scclSuccess stands for an abort.
void UcxTransport::sendFailureNotices(scclResult_t reason, int origin) {
  if (notices_sent_) return;
  notices_sent_ = true;
  // A member: UCX may read it until the worker is destroyed (in the destructor, before members).
  notice_out_payload_ =
      (static_cast<uint32_t>(origin) << kNoticeOriginShift) | static_cast<uint32_t>(reason);
  const uint32_t* payload = &notice_out_payload_;
  const uint64_t tag = (kKindNotice << 62) | (static_cast<uint64_t>(rank_) << kSourceShift);
  std::vector<void*> in_flight;
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (static_cast<int>(r) == rank_ || static_cast<int>(r) == origin || peers_[r].ep == nullptr)
      continue;
    ucp_request_param_t param{};
    // Best effort: a notice that cannot leave leaves that peer to its own deadline.
    ucs_status_ptr_t status =
        ucp_tag_send_nbx(peers_[r].ep, payload, sizeof(*payload), tag, &param);
    if (status != nullptr && !UCS_PTR_IS_ERR(status)) in_flight.push_back(status);
  }
  // The caller may destroy the transport (or the process may exit) right after, so progress
  // until every notice has left, for at most a second: a fixed 20 ms was not enough for 7
  // notices over TCP with 8 ranks on 2 busy cores (a peer then waited for its 20 s deadline).
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  while (!in_flight.empty() && std::chrono::steady_clock::now() < until) {
    if (ucp_worker_progress(worker_) == 0) sched_yield();
    for (size_t i = 0; i < in_flight.size();) {
      if (ucp_request_check_status(in_flight[i]) != UCS_INPROGRESS) {
        ucp_request_free(in_flight[i]);
        in_flight[i] = in_flight.back();
        in_flight.pop_back();
      } else {
        ++i;
      }
    }
  }
  for (void* request : in_flight) ucp_request_free(request);  // released when it completes
}

// ---- point-to-point --------------------------------------------------------------------------

scclResult_t UcxTransport::validatePointToPoint(const char* operation, const void* buf,
                                                size_t bytes, int peer, int tag) const {
  SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks_, "%s: peer %d out of range [0, %d)", operation, peer,
                   nranks_);
  SCCL_REQUIRE_ARG(tag >= 0, "%s: tag %d is negative", operation, tag);
  SCCL_REQUIRE_ARG(buf != nullptr || bytes == 0, "%s: buffer is NULL but bytes is %zu", operation,
                   bytes);
  return scclSuccess;
}

scclResult_t UcxTransport::reapCompletedSends() {
  while (!pending_sends_.empty()) {
    Ops& ops = pending_sends_.front().ops;
    for (Op& op : ops) {
      if (!op.done) return scclSuccess;
    }
    SCCL_CHECK(waitOps(ops, "send"));  // all complete: releases the requests, checks statuses
    pending_sends_.pop_front();
  }
  return scclSuccess;
}

scclResult_t UcxTransport::send(const void* buf, size_t bytes, int peer, int tag) {
  return guarded([&] { return runSend(buf, bytes, peer, tag); });
}

scclResult_t UcxTransport::runSend(const void* buf, size_t bytes, int peer, int tag) {
  SCCL_CHECK(validatePointToPoint("send", buf, bytes, peer, tag));
  ucp_worker_progress(worker_);
  SCCL_CHECK(reapCompletedSends());
  PendingSend& pending = pending_sends_.emplace_back(this);
  pending.data.resize(bytes);
  if (bytes > 0) std::memcpy(pending.data.data(), buf, bytes);
  return postSend(pending.ops, pending.data.data(), bytes, peer, userTag(rank_, tag));
}

scclResult_t UcxTransport::recv(void* buf, size_t bytes, int peer, int tag) {
  return guarded([&] { return runRecv(buf, bytes, peer, tag); });
}

scclResult_t UcxTransport::runRecv(void* buf, size_t bytes, int peer, int tag) {
  SCCL_CHECK(validatePointToPoint("recv", buf, bytes, peer, tag));
  Ops ops(this);
  SCCL_CHECK(postRecv(ops, buf, bytes, peer, userTag(peer, tag)));
  SCCL_CHECK(waitOps(ops, "recv"));
  return reapCompletedSends();
}

}  // namespace sccl
