// The stream-ordered sync_free call (config streamOrdered, presets micro_sync_free and
// exdyna_sync_free): the device
// path of cuda/device_sparse_allreduce.cc with every host step moved to the device, so that a
// call only enqueues work on the caller's stream, never waits for it, and can be captured in a
// CUDA graph and replayed. The sync-free reduction of issue 11 ("the threshold update runs on the
// device, so a sparse all-reduce can be captured in a CUDA graph"); no reference code has it.
//
// Steps of one call on rank r, all on `stream` (d_ = device memory):
//  1. d_acc = d_residual + sendbuf, non-finite count into a device word;
//  2. syncFreeCallRanges: every rank's range at this call from the partitions in device memory
//     and the device call number (kernels/shared/cyclic_partition.h, the host's function);
//  3. syncFreeSelect with the device threshold: the capped selection and the slot;
//  4. all-gather of the slots on the stream (StreamCollectives: ncclAllGather);
//  5. syncFreeCheckHeaders: the host's slot-header checks (kernels/shared/sync_free_slot_check.h)
//     and the non-finite policy, in one thread, into the call's status word; a fault also goes to
//     the sparsifier's sticky fault word in pinned host memory;
//  6. syncFreeGatherSlots (every peer index range-checked; a bad one fails the call: settle);
//  7. rank-order all-reduce of the n * capacity values on the stream (ncclAllGather into the
//     sparsifier's scratch + the rank-order kernel: no allocation while capturing);
//  8. recvbuf = 0 and the values scattered (divided by n for scclAvg) if the call completes,
//     else recvbuf = NaN; d_acc zeroed where sent and copied into d_residual if it completes;
//  9. if the call completes, the scaling rule on the gathered counts updates the device
//     threshold and (exdyna_sync_free) ExDyna's rebalancing moves the partition boundaries
//     (kernels/shared/exdyna_rebalance.h, the host's pass); the call is counted for the statistics
//     and the call number advances.
// Bytes on the wire: the host sync_free reduction's (docs/algorithms/sync_free.md). Work added
// against the read-back path: one copy of the accumulator into the residual per call (a graph
// holds fixed pointers, so the two buffers cannot trade roles) and a few one-thread kernels.
// Differs from the read-back path in how errors surface: asynchronously
// (scclSparsifierGetAsyncError), as NCCL's do; the selections, values and residuals are the same.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/exchange_accounting.h"
#include "kernels/shared/sync_free_async_fault.h"
#include "kernels/shared/sync_free_slot_check.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"
#include "cuda/cuda_status.h"
#include "cuda/device_sparsifier_state.h"
#include "transports/stream_collectives.h"

namespace sccl {
namespace {

const char* faultText(AsyncFault fault) {
  switch (fault) {
    case AsyncFault::OtherCall: return "was at another call or config (mismatched calls)";
    case AsyncFault::CountAboveCapacity: return "claimed more selected entries than allowed";
    case AsyncFault::IndexOutOfRange:
      return "sent an index outside its range or out of order (a peer's slot)";
    case AsyncFault::NonFinite: return "had NaN/Inf in its accumulated gradient (policy error)";
    default: return "reported an unknown fault";
  }
}

scclResult_t faultResult(AsyncFault fault) {
  switch (fault) {
    case AsyncFault::OtherCall: return scclInvalidUsage;
    case AsyncFault::NonFinite: return scclInvalidArgument;
    default: return scclRemoteError;
  }
}

}  // namespace

scclResult_t checkStreamOrderedCall(const scclSparsifier& sp, void* stream) {
  if (sp.comm->transport->streamCollectives() == nullptr) {
    return fail(scclInvalidUsage,
                "streamOrdered needs the nccl transport: the call only enqueues work on the "
                "caller's stream (so that a CUDA graph can capture it), and NCCL is the transport "
                "whose collectives go on a stream; '%s' carries device buffers through pinned "
                "host staging, which waits on the host between its copies and its operations "
                "(set streamOrdered = 0 to run this preset on it)",
                sp.comm->transport->name());
  }
  if (sp.device != nullptr) return scclSuccess;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SCCL_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture),
                  "stream-ordered sparse all-reduce: capture status");
  if (capture != cudaStreamCaptureStatusNone) {
    return fail(scclInvalidUsage,
                "stream-ordered sparse all-reduce: the first call on device buffers allocates the "
                "sparsifier's device memory and cannot be captured; make one call (a warm-up "
                "step) before capturing");
  }
  return scclSuccess;
}

scclResult_t runStreamOrderedSparseAllreduce(SparseCall& call, void* stream_handle) {
  scclSparsifier& sp = *call.sp;
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  StreamCollectives* collectives = sp.comm->transport->streamCollectives();  // checked before
  DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr) SCCL_CHECK(createDeviceState(sp, &d));
  const int rank = sp.comm->rank;
  const int n = sp.comm->nranks;
  const uint64_t capacity = d->capacity;
  const size_t slot_bytes = (kSlotHeaderWords + capacity) * sizeof(int64_t);
  const size_t element = accElementSize(sp);
  const uint64_t fingerprint = sp.fingerprint;  // the config's and the density in effect
  const char* what = "stream-ordered sparse all-reduce";

  // Steps 1-3.
  SCCL_CHECK(d->kernels.fillZero(d->nonfinite, sizeof(uint64_t), stream));
  SCCL_CHECK(d->kernels.accumulate(d->acc, sp.config.error_feedback ? d->residual : nullptr,
                                   sp.acc_dtype, call.sendbuf, sp.dtype, sp.count, d->nonfinite,
                                   stream));
  SCCL_CUDA_CHECK(
      cuda_dispatch::syncFreeCallRanges(d->partitions, n, d->sequence, d->ranges, stream), what);
  SCCL_CHECK(d->kernels.syncFreeSelect(d->acc, sp.acc_dtype, d->ranges + 2 * size_t(rank),
                                       d->select_items, d->threshold, capacity, d->nonfinite,
                                       fingerprint, d->sequence, d->slot, stream));

  // Steps 4-6.
  SCCL_CHECK(timedCollective(call, [&](Transport&) {
    return collectives->allGatherOnStream(d->slot, d->gathered, slot_bytes, stream);
  }));
  countAllGather(call, slot_bytes);
  SCCL_CUDA_CHECK(
      cuda_dispatch::syncFreeCheckHeaders(d->gathered, n, capacity, fingerprint, d->sequence,
                                          d->ranges, sp.config.non_finite == scclNonFiniteError,
                                          d->status, d->fault_device, stream),
      what);
  SCCL_CHECK(d->kernels.fillZero(d->bad, sizeof(uint32_t), stream));
  SCCL_CHECK(d->kernels.syncFreeGatherSlots(d->acc, sp.acc_dtype, sp.count, d->gathered, d->ranges,
                                            n, capacity, d->values, d->bad, stream));
  SCCL_CUDA_CHECK(
      cuda_dispatch::syncFreeSettle(d->bad, d->sequence, d->status, d->fault_device, stream), what);

  // Step 7.
  const size_t slots = size_t(n) * capacity;
  SCCL_CHECK(timedCollective(call, [&](Transport&) {
    return collectives->allReduceOnStream(d->values, d->values, slots, sp.acc_dtype,
                                          d->reduce_scratch, stream);
  }));
  countAllReduce(call, slots * element);

  // Step 8.
  SCCL_CUDA_CHECK(
      cuda_dispatch::syncFreeFillOutput(call.recvbuf, sp.dtype, sp.count, d->status, stream), what);
  SCCL_CHECK(d->kernels.syncFreeWrite(call.recvbuf, sp.dtype, d->acc, sp.acc_dtype, sp.count,
                                      d->gathered, d->ranges, n, capacity, d->values,
                                      call.op == scclAvg ? uint32_t(n) : 1u, d->status, stream));
  if (sp.config.error_feedback) {
    SCCL_CUDA_CHECK(cuda_dispatch::syncFreeCommitResidual(d->residual, d->acc, sp.count * element,
                                                          d->status, stream),
                    what);
  }

  // Step 9.
  if (const ScalingRule* rule = sp.estimator->scalingRule()) {
    SCCL_CHECK(d->kernels.syncFreeUpdateThreshold(d->gathered, n, capacity, sp.k_target, *rule,
                                                  d->status, d->threshold, stream));
  }
  if (d->rebalances) {
    SCCL_CUDA_CHECK(
        cuda_dispatch::syncFreeExDynaRebalance(d->exdyna_rule, d->gathered, capacity, d->sequence,
                                               d->status, d->exdyna_arrays, d->partitions, stream),
        what);
  }
  SCCL_CUDA_CHECK(cuda_dispatch::syncFreeEndCall(d->gathered, n, capacity, sp.k_target, d->status,
                                                 d->totals, d->sequence, stream),
                  what);
  // The host knows none of the call's outcome: the statistics read it from the device when asked
  // (deviceRefreshStats), the residual stays where it is.
  call.residual_updated = true;
  return scclSuccess;
}

scclResult_t deviceAsyncError(const scclSparsifier& sp, scclResult_t* result) {
  *result = scclSuccess;
  const DeviceSparsifierState* d = sp.device.get();
  if (d != nullptr && d->index_fault_host != nullptr) {
    // The resident gather's index check (src/algorithms/resident_gather.cc), as far as the
    // device has got: published by the call's last kernel.
    const uint32_t rank = __atomic_load_n(d->index_fault_host, __ATOMIC_ACQUIRE);
    if (rank != kNoIndexFault) {
      *result = scclRemoteError;
      (void)fail(scclRemoteError,
                 "sparse all-reduce on device buffers: rank %u sent an index outside its range or "
                 "out of order; that call left recvbuf untouched and kept the residual, and every "
                 "later call fails until scclSparsifierReset",
                 rank);
      return scclSuccess;
    }
  }
  if (d == nullptr || d->fault_host == nullptr) return scclSuccess;
  const uint64_t word = __atomic_load_n(d->fault_host, __ATOMIC_ACQUIRE);
  if (word == 0) return scclSuccess;
  const AsyncFault fault = asyncFaultKind(word);
  *result = faultResult(fault);
  const int rank = asyncFaultRank(word);
  char who[32] = "a peer";
  if (rank >= 0) std::snprintf(who, sizeof(who), "rank %d", rank);
  // The message goes where scclGetLastError reads it; the query itself succeeds.
  (void)fail(*result,
             "stream-ordered sparse all-reduce: at call %u %s %s; every later call fills recvbuf "
             "with NaN and changes nothing until scclSparsifierReset",
             asyncFaultCall(word), who, faultText(fault));
  return scclSuccess;
}

scclResult_t deviceRefreshStats(scclSparsifier& sp) {
  const DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr || !d->stream_ordered) return scclSuccess;
  const size_t n = static_cast<size_t>(sp.comm->nranks);
  const size_t slot_words = kSlotHeaderWords + d->capacity;
  // The calls enqueued so far may still run on a stream the caller owns: wait for the device.
  SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "sparsifier statistics: the calls' work");
  std::vector<int64_t> headers(n * kSlotHeaderWords);
  SCCL_CUDA_CHECK(cudaMemcpy2D(headers.data(), kSlotHeaderWords * sizeof(int64_t), d->gathered,
                               slot_words * sizeof(int64_t), kSlotHeaderWords * sizeof(int64_t), n,
                               cudaMemcpyDeviceToHost),
                  "sparsifier statistics: slot headers");
  cuda_dispatch::StreamOrderedTotals totals;
  SCCL_CUDA_CHECK(cudaMemcpy(&totals, d->totals, sizeof(totals), cudaMemcpyDeviceToHost),
                  "sparsifier statistics: totals");
  double threshold = 0;
  SCCL_CUDA_CHECK(cudaMemcpy(&threshold, d->threshold, sizeof(double), cudaMemcpyDeviceToHost),
                  "sparsifier statistics: threshold");
  scclSparseStats_t& s = sp.stats;
  uint64_t k_global = 0, k_max = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint64_t k = std::min<uint64_t>(uint64_t(headers[r * kSlotHeaderWords]), d->capacity);
    sp.rank_counts[r] = k;
    k_global += k;
    k_max = std::max(k_max, k);
  }
  const size_t rank = static_cast<size_t>(sp.comm->rank);
  s.iteration = totals.completed;
  s.kLocal = sp.rank_counts[rank];
  s.kGlobal = k_global;
  s.kMax = k_max;
  s.density = sp.count == 0 ? 0.0 : double(k_global) / double(sp.count);
  s.densityError = double(k_global) / double(sp.k_target) - 1.0;
  s.gatherInflation = k_global == 0 ? 0.0 : double(n) * double(k_max) / double(k_global);
  s.threshold = threshold;  // the threshold of the next call
  s.nonFinite = uint64_t(headers[rank * kSlotHeaderWords + 1]);
  // Every call moves the same bytes; the host cannot time work it only enqueued.
  const uint64_t calls = totals.completed + totals.discarded;
  s.totalBytesSent = s.bytesSent * calls;
  s.totalBytesReceived = s.bytesReceived * calls;
  s.timeSelectUs = s.timeCommUs = s.timeOtherUs = 0;
  s.totalTimeSelectUs = s.totalTimeCommUs = s.totalTimeOtherUs = 0;
  s.meanAbsDensityError =
      totals.completed == 0 ? 0.0 : totals.sum_abs_density_error / double(totals.completed);
  return scclSuccess;
}

}  // namespace sccl
