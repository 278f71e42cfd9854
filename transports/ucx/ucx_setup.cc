// Creation and destruction of the UCX transport.
//
// Set-up, all ranks together: (1) a UCP context (features TAG, RMA, AMO64; UCX reads its own
// UCX_* variables such as UCX_TLS and UCX_NET_DEVICES here) and one worker; (2) two bootstrap
// all-gathers: the length of every rank's set-up record, then the records padded to the longest
// (ucx_peer_info.h), each checked before use; (3) one endpoint per rank, this one included; (4) a
// receive posted for failure notices; (5) a barrier over UCX itself, so that every endpoint has
// carried a message before the communicator is handed out.
//
// Destruction: a healthy transport first meets its peers in a barrier (so that no rank closes an
// endpoint a peer still needs), then closes the endpoints with a flush; a broken or aborted one
// closes them at once (UCP_EP_CLOSE_FLAG_FORCE) and never blocks.
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/ucx/ucx_transport.h"

namespace sccl {
namespace {

const char* threadModeName(ucs_thread_mode_t mode) {
  switch (mode) {
    case UCS_THREAD_MODE_SINGLE: return "single";
    case UCS_THREAD_MODE_SERIALIZED: return "serialized";
    case UCS_THREAD_MODE_MULTI: return "multi";
    default: return "unknown";
  }
}

scclResult_t ucxFailure(const char* call, ucs_status_t status) {
  return fail(scclSystemError, "UCX transport: %s failed: %s", call, ucs_status_string(status));
}

}  // namespace

scclResult_t createUcxTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out) {
  SCCL_REQUIRE_ARG(out != nullptr, "UCX transport: output pointer is NULL");
  SCCL_REQUIRE_ARG(setup.nranks >= 1 && setup.rank >= 0 && setup.rank < setup.nranks,
                   "UCX transport: rank %d out of range [0, %d)", setup.rank, setup.nranks);
  SCCL_REQUIRE_ARG(setup.nranks < (1 << 22), "UCX transport: %d ranks (at most %d)", setup.nranks,
                   (1 << 22) - 1);
  SCCL_REQUIRE_ARG(setup.timeout_ms > 0, "UCX transport: timeout %lld ms must be > 0",
                   static_cast<long long>(setup.timeout_ms));
  if (setup.bootstrap == nullptr) {
    return fail(scclInternalError, "UCX transport: created without a bootstrap");
  }
  std::unique_ptr<UcxTransport> transport(new UcxTransport(setup));
  SCCL_CHECK(transport->recordOutcome(transport->setUp(setup)));
  *out = std::move(transport);
  return scclSuccess;
}

UcxTransport::UcxTransport(const TransportSetup& setup)
    : rank_(setup.rank), nranks_(setup.nranks), timeout_ms_(setup.timeout_ms) {
  label_ = "UCX transport";
  if (!setup.comm_name.empty()) label_ += " '" + setup.comm_name + "'";
  label_ += " rank " + std::to_string(rank_) + " of " + std::to_string(nranks_);
  peers_.resize(static_cast<size_t>(nranks_));
}

scclResult_t UcxTransport::setUp(const TransportSetup& setup) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) return ucxFailure("ucp_config_read", status);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_REQUEST_SIZE | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
  params.mt_workers_shared = 0;
  params.request_size = 0;
  params.name = "sparsecoll";
  status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (status != UCS_OK) return ucxFailure("ucp_init", status);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = ucp_worker_create(context_, &worker_params, &worker_);
  if (status != UCS_OK) return ucxFailure("ucp_worker_create", status);
  ucp_worker_attr_t worker_attr{};
  worker_attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  ucp_worker_query(worker_, &worker_attr);

  std::vector<ucx::PeerInfo> infos;
  std::vector<std::vector<uint8_t>> addresses;
  SCCL_CHECK(exchangeAddresses(setup, &infos, &addresses));
  const ucx::PeerInfo mine = infos[static_cast<size_t>(rank_)];
  for (size_t r = 0; r < peers_.size(); ++r) {
    peers_[r].info = infos[r];
    peers_[r].owner = this;
    peers_[r].same_host = infos[r].host_key == mine.host_key;
  }
  SCCL_CHECK(connectEndpoints(addresses));
  SCCL_CHECK(postNoticeReceive());
  SCCL_CHECK(runBarrier());
  SCCL_INFO(LogSubsys::Transport, "%s ready: UCX %s, worker thread mode %s", label_.c_str(),
            ucp_get_version_string(), threadModeName(worker_attr.thread_mode));
  return scclSuccess;
}

scclResult_t UcxTransport::exchangeAddresses(const TransportSetup& setup,
                                             std::vector<ucx::PeerInfo>* infos,
                                             std::vector<std::vector<uint8_t>>* addresses) {
  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  ucs_status_t status = ucp_worker_get_address(worker_, &address, &address_bytes);
  if (status != UCS_OK) return ucxFailure("ucp_worker_get_address", status);
  std::vector<uint8_t> record =
      ucx::encodePeerRecord(ucx::describeThisProcess(), address, address_bytes);
  ucp_worker_release_address(worker_, address);

  const size_t n = static_cast<size_t>(nranks_);
  uint64_t my_length = record.size();
  std::vector<uint64_t> lengths(n);
  SCCL_CHECK(setup.bootstrap->allGather(&my_length, lengths.data(), sizeof(my_length)));
  const uint64_t limit = ucx::peerRecordHeaderBytes() + ucx::kMaxAddressBytes;
  uint64_t longest = 0;
  for (size_t r = 0; r < n; ++r) {
    if (lengths[r] < ucx::peerRecordHeaderBytes() || lengths[r] > limit) {
      return fail(scclRemoteError,
                  "%s: rank %zu announced a set-up record of %llu bytes (allowed %zu..%llu)",
                  label_.c_str(), r, static_cast<unsigned long long>(lengths[r]),
                  ucx::peerRecordHeaderBytes(), static_cast<unsigned long long>(limit));
    }
    longest = std::max(longest, lengths[r]);
  }
  record.resize(longest, 0);
  std::vector<uint8_t> all(n * longest);
  SCCL_CHECK(setup.bootstrap->allGather(record.data(), all.data(), longest));
  infos->resize(n);
  addresses->resize(n);
  for (size_t r = 0; r < n; ++r) {
    SCCL_CHECK(ucx::decodePeerRecord(all.data() + r * longest, lengths[r], static_cast<int>(r),
                                     &(*infos)[r], &(*addresses)[r]));
  }
  return scclSuccess;
}

scclResult_t UcxTransport::connectEndpoints(const std::vector<std::vector<uint8_t>>& addresses) {
  for (size_t r = 0; r < peers_.size(); ++r) {
    Peer& peer = peers_[r];
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses[r].data());
    if (peer.same_host) {
      // Shared memory cannot report a dead peer; the process table does (checkPeersAlive).
      params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    } else {
      params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      params.err_handler.cb = &UcxTransport::onEndpointError;
      params.err_handler.arg = &peer;
    }
    ucs_status_t status = ucp_ep_create(worker_, &params, &peer.ep);
    if (status != UCS_OK) {
      peer.ep = nullptr;
      return fail(scclSystemError,
                  "%s: cannot connect to rank %zu (%s): %s; check UCX_TLS / UCX_NET_DEVICES",
                  label_.c_str(), r, peer.same_host ? "same host" : "other host",
                  ucs_status_string(status));
    }
  }
  return scclSuccess;
}

scclResult_t UcxTransport::postNoticeReceive() {
  ucp_request_param_t param;
  prepareRecv(&param, &notice_op_);
  notice_op_.expected = sizeof(notice_payload_);
  notice_op_.is_recv = true;
  // Kind "notice" from any source: only the two kind bits are matched.
  const uint64_t tag = uint64_t{2} << 62, mask = uint64_t{3} << 62;
  ucs_status_ptr_t status =
      ucp_tag_recv_nbx(worker_, &notice_payload_, sizeof(notice_payload_), tag, mask, &param);
  if (UCS_PTR_IS_ERR(status)) {
    return ucxFailure("ucp_tag_recv_nbx (failure notices)", UCS_PTR_STATUS(status));
  }
  notice_op_.request = status;
  return scclSuccess;
}

UcxTransport::~UcxTransport() {
  bool failed = broken_ != scclSuccess || abort_requested_.load();
  if (abort_requested_.load() && broken_ == scclSuccess) sendFailureNotices(scclSuccess, rank_);
  if (!failed && worker_ != nullptr) {
    // Meet the peers, so that nobody closes an endpoint a peer still needs; then let the last
    // sends leave.
    if (recordOutcome(runBarrier()) == scclSuccess) {
      for (PendingSend& pending : pending_sends_) {
        if (waitOps(pending.ops, "delivery of pending sends at destruction") != scclSuccess) break;
      }
    }
    failed = broken_ != scclSuccess;
  }
  for (PendingSend& pending : pending_sends_) abandon(pending.ops);
  if (worker_ != nullptr && notice_op_.request != nullptr) {
    ucp_request_cancel(worker_, notice_op_.request);
    ucp_request_free(notice_op_.request);
    notice_op_.request = nullptr;
  }
  closeEndpoints(failed);
  kept_until_closed_.clear();  // no operation can reach this memory once the endpoints are gone
  // Memory of sends UCX may still read when they were abandoned is released only with the worker.
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  pending_sends_.clear();
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxTransport::closeEndpoints(bool force) {
  if (worker_ == nullptr) return;
  std::vector<void*> requests;
  for (Peer& peer : peers_) {
    if (peer.ep == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t status = ucp_ep_close_nbx(peer.ep, &param);
    if (status != nullptr && !UCS_PTR_IS_ERR(status)) requests.push_back(status);
    peer.ep = nullptr;
  }
  // A flushing close completes with the peers' help; bounded so that destruction cannot hang.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(force ? 100 : std::min<int64_t>(timeout_ms_, 5000));
  for (void* request : requests) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < deadline) {
      if (ucp_worker_progress(worker_) == 0) sched_yield();
    }
    ucp_request_free(request);
  }
}

void UcxTransport::abort() {
  abort_requested_.store(true);
}

}  // namespace sccl
