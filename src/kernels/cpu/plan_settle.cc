// The CPU backend's settling of a call whose plan the host does not read (kernels.h,
// settlePlan): the decisions are kernels/shared/plan_settle.h's, which the CUDA backend runs
// too.
#include "core/error.h"
#include "kernels/cpu/call_outcome.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/shared/plan_settle.h"

namespace sccl::cpu {

scclResult_t settlePlan(const PlanSettleArgs& a) {
  uint64_t raise = 0;
  *a.status = settlePlanStatus(a, loadFault(a.fault), &raise);
  raiseFault(a.fault, raise);
  settlePlanTotals(a, *a.status);
  if (*a.status != kSyncFreeCompletes) fillNaN(a.recv, a.recv_dtype, a.count);
  return scclSuccess;
}

scclResult_t writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3) {
  dst[0] = w0;
  dst[1] = w1;
  dst[2] = w2;
  dst[3] = w3;
  return scclSuccess;
}

}  // namespace sccl::cpu
