// The outcome of a device call whose plan the host does not read (S2 with its "topk" selection,
// algorithms/sketch_call.cc; CLT-k, algorithms/resident_gather.cc; both on device buffers),
// compiled for the host and the device: the CPU backend runs these functions directly, the CUDA
// backend in a one-thread kernel (cuda/kernels/plan_settle.cu), so both settle every call alike.
// The plan's checks (kernels/shared/gather_plan.h's statuses), the call's index check and the
// non-finite policy become the call's status word, the sync_free call's three outcomes
// (kernels/shared/sync_free_call.h), which the later kernels read:
//   kSyncFreeCompletes: the plan and the index check passed and no earlier call failed;
//   kSyncFreeDiscarded: non-finite values under the propagate policy (recvbuf = NaN, the residual
//     kept, as the host reduction does);
//   kSyncFreeFailed: a failed check now (raised into the sticky fault word,
//     kernels/shared/sync_free_async_fault.h, which scclSparsifierGetAsyncError reads without
//     waiting) or at an earlier call (recvbuf = NaN, the residual kept).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/shared/gather_plan.h"
#include "kernels/shared/host_device.h"
#include "kernels/shared/sync_free_async_fault.h"
#include "kernels/shared/sync_free_call.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Which threshold a completed call leaves in the totals (SyncFreeTotals::last_threshold).
enum SettleThreshold : uint32_t {
  kSettleThresholdKeep = 0,          // none: the last one stays (CLT-k, a rank that did not lead)
  kSettleThresholdSketchCutoff = 1,  // S2: the L2 norm of the rank's last kept block
  kSettleThresholdKth = 2,           // CLT-k's leader: the magnitude of its k-th entry
};

// KernelBackend::settlePlan's arguments; every pointer in the kernels' memory except fault
// (memory the host reads without waiting: mapped page-locked memory on CUDA).
struct PlanSettleArgs {
  const uint64_t* plan = nullptr;  // planSketch's or planGather's plan
  uint64_t sequence = 0;           // the call number a raised fault names
  uint64_t k_target = 0;
  bool nonfinite_is_error = false;  // scclNonFiniteError
  // The resident gather's index-check word (kNoIndexFault: none; null: no index check).
  const uint32_t* index_fault = nullptr;
  uint32_t threshold = kSettleThresholdKeep;
  scclDataType_t threshold_dtype = scclFloat32;  // kSettleThresholdKth: the accumulator's
  uint64_t* fault = nullptr;                     // the sparsifier's sticky fault word
  uint32_t* status = nullptr;                    // the call's status word (written)
  SyncFreeTotals* totals = nullptr;
  uint64_t* last_completed = nullptr;  // the call number of the last completed call (may be null)
  void* recv = nullptr;
  scclDataType_t recv_dtype = scclFloat32;
  size_t count = 0;
};

// The call's status from its plan, the index check, the sticky fault word and the policy;
// *raise = the fault word to set (0: none).
SCCL_HOST_DEVICE inline uint32_t settlePlanStatus(const PlanSettleArgs& a, uint64_t fault,
                                                  uint64_t* raise) {
  *raise = 0;
  if (fault != 0) return kSyncFreeFailed;
  const uint64_t* plan = a.plan;
  const uint64_t status = plan[kPlanStatus];
  const uint32_t bad_index = a.index_fault != nullptr ? *a.index_fault : kNoIndexFault;
  if (status == kPlanOk && bad_index != kNoIndexFault) {
    *raise = encodeAsyncFault(AsyncFault::IndexOutOfRange, int(bad_index & 0xffffffu), a.sequence);
    return kSyncFreeFailed;
  }
  if (status == kPlanOk) return kSyncFreeCompletes;
  if (status == kPlanNonFinite && !a.nonfinite_is_error) return kSyncFreeDiscarded;
  const int rank = int(plan[kPlanRank] & 0xffffffu);
  AsyncFault kind = AsyncFault::IndexOutOfRange;  // a peer's bad index, now or earlier
  if (status == kPlanNonFinite) kind = AsyncFault::NonFinite;
  if (status == kPlanMismatch) kind = AsyncFault::OtherCall;
  if (status == kPlanTooMany || status == kPlanSoleCount) kind = AsyncFault::CountAboveCapacity;
  if (status == kPlanBadBitmap) kind = AsyncFault::BadBitmap;
  // The max all-reduce of S2's bitmaps does not tell which rank sent the byte.
  *raise = encodeAsyncFault(kind, status == kPlanBadBitmap ? -1 : rank, a.sequence);
  return kSyncFreeFailed;
}

// The threshold a.threshold asks for, from the plan's edge word: S2's cut-off (its square as a
// double's bits; 0 for the "nonzero" selection), or CLT-k's k-th magnitude pattern.
SCCL_HOST_DEVICE inline double settledThreshold(const PlanSettleArgs& a) {
  const uint64_t edge = a.plan[kPlanEdge];
  if (a.threshold == kSettleThresholdSketchCutoff) {
    double squared = 0;
    memcpy(&squared, &edge, sizeof(squared));
    return ::sqrt(squared);
  }
  if (a.threshold_dtype == scclFloat64) {
    double value = 0;
    memcpy(&value, &edge, sizeof(value));
    return value;
  }
  const uint32_t bits = uint32_t(edge);
  float value = 0;
  memcpy(&value, &bits, sizeof(value));
  return double(value);
}

// The totals of the statistics: a completed call counts with |k'/k - 1| (k' = kPlanKGlobal) and
// the threshold a.threshold asks for (and its call number), a discarded one counts as such, a
// failed one not at all.
SCCL_HOST_DEVICE inline void settlePlanTotals(const PlanSettleArgs& a, uint32_t status) {
  SyncFreeTotals* totals = a.totals;
  if (status == kSyncFreeCompletes) {
    const double error =
        a.k_target == 0 ? 0.0 : double(a.plan[kPlanKGlobal]) / double(a.k_target) - 1.0;
    totals->sum_abs_density_error += error < 0 ? -error : error;
    if (a.threshold != kSettleThresholdKeep) totals->last_threshold = settledThreshold(a);
    if (a.last_completed != nullptr) *a.last_completed = a.sequence;
    ++totals->completed;
  } else if (status == kSyncFreeDiscarded) {
    ++totals->discarded;
  }
}

}  // namespace sccl
