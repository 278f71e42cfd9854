// The outcome of a device call whose plan the host does not read (S2 on device buffers,
// algorithms/sketch_call.cc), compiled for the host and the device: the CPU backend runs these
// functions directly, the CUDA backend in a one-thread kernel (cuda/kernels/plan_settle.cu), so
// both settle every call alike. The plan's checks (kernels/shared/gather_plan.h's statuses) and
// the non-finite policy become the call's status word, the sync_free call's three outcomes
// (kernels/shared/sync_free_call.h), which the later kernels read:
//   kSyncFreeCompletes: the plan passed and no earlier call failed;
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

// KernelBackend::settleSketchPlan's arguments; every pointer in the kernels' memory except fault
// (memory the host reads without waiting: mapped page-locked memory on CUDA).
struct PlanSettleArgs {
  const uint64_t* plan = nullptr;  // planSketch's plan
  uint64_t sequence = 0;           // the call number a raised fault names
  uint64_t k_target = 0;
  bool nonfinite_is_error = false;  // scclNonFiniteError
  uint64_t* fault = nullptr;        // the sparsifier's sticky fault word
  uint32_t* status = nullptr;       // the call's status word (written)
  SyncFreeTotals* totals = nullptr;
  void* recv = nullptr;
  scclDataType_t recv_dtype = scclFloat32;
  size_t count = 0;
};

// The call's status from its plan, the sticky fault word and the policy; *raise = the fault word
// to set (0: none). sequence: the call number the fault names.
SCCL_HOST_DEVICE inline uint32_t settlePlanStatus(const uint64_t* plan, uint64_t sequence,
                                                  bool nonfinite_is_error, uint64_t fault,
                                                  uint64_t* raise) {
  *raise = 0;
  if (fault != 0) return kSyncFreeFailed;
  const uint64_t status = plan[kPlanStatus];
  if (status == kPlanOk) return kSyncFreeCompletes;
  if (status == kPlanNonFinite && !nonfinite_is_error) return kSyncFreeDiscarded;
  const int rank = int(plan[kPlanRank] & 0xffffffu);
  switch (status) {
    case kPlanNonFinite: *raise = encodeAsyncFault(AsyncFault::NonFinite, rank, sequence); break;
    case kPlanMismatch: *raise = encodeAsyncFault(AsyncFault::OtherCall, rank, sequence); break;
    case kPlanTooMany:
      *raise = encodeAsyncFault(AsyncFault::CountAboveCapacity, rank, sequence);
      break;
    // The max all-reduce of the bitmaps does not tell which rank sent the byte.
    case kPlanBadBitmap: *raise = encodeAsyncFault(AsyncFault::BadBitmap, -1, sequence); break;
    default: *raise = encodeAsyncFault(AsyncFault::IndexOutOfRange, rank, sequence); break;
  }
  return kSyncFreeFailed;
}

// The totals of the statistics: a completed call counts with |k'/k - 1| (k' = kPlanKGlobal) and
// its threshold (`threshold`: the rank's own, which the caller derived from the plan), a
// discarded one counts as such, a failed one not at all.
SCCL_HOST_DEVICE inline void settlePlanTotals(uint32_t status, const uint64_t* plan,
                                              uint64_t k_target, double threshold,
                                              SyncFreeTotals* totals) {
  if (status == kSyncFreeCompletes) {
    const double error = k_target == 0 ? 0.0 : double(plan[kPlanKGlobal]) / double(k_target) - 1.0;
    totals->sum_abs_density_error += error < 0 ? -error : error;
    totals->last_threshold = threshold;
    ++totals->completed;
  } else if (status == kSyncFreeDiscarded) {
    ++totals->discarded;
  }
}

// S2's threshold statistic: the L2 norm of the rank's last kept block (the plan's edge word holds
// its square as a double's bits; 0 for the "nonzero" selection), as the host's read-back gives.
SCCL_HOST_DEVICE inline double sketchPlanThreshold(const uint64_t* plan) {
  double squared = 0;
  memcpy(&squared, &plan[kPlanEdge], sizeof(squared));
  return ::sqrt(squared);
}

}  // namespace sccl
