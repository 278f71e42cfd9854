// The CPU backend's plan of the device-resident union call (kernels.h, planUnion): the header
// checks are kernels/shared/union_plan.h's, which the CUDA backend runs too; the union merges the
// checked (ascending) slices and drops repeats (core/ascending_runs.h), as the host reduction's
// global list.
#include <algorithm>
#include <vector>

#include "core/ascending_runs.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/shared/union_plan.h"

namespace sccl::cpu {

scclResult_t planUnion(const uint64_t* slots, const GatherPlanParams& params, size_t capacity,
                       const uint64_t* ranges, int64_t* global, uint64_t* plan) {
  planUnionHeaders(slots, params, capacity, ranges, plan);
  if (plan[kPlanStatus] != kPlanOk) return scclSuccess;
  uint32_t bad = kNoIndexFault;
  size_t n = 0;
  thread_local std::vector<size_t> run_ends;  // kept per thread
  run_ends.clear();
  for (uint64_t r = 0; r < params.nranks; ++r) {
    const uint64_t* slot = slots + r * unionSlotWords(capacity);
    const int64_t* slice = reinterpret_cast<const int64_t*>(slot + kUnionSlotHeaderWords);
    const uint64_t k = slot[kUnionSlotCount];  // at most the capacity: checked above
    for (uint64_t j = 0; j < k; ++j) {
      if (!sliceEntryValid(slice, size_t(j), ranges[2 * r], ranges[2 * r + 1])) {
        bad = std::min<uint32_t>(bad, uint32_t(r));
        break;
      }
      global[n++] = slice[j];
    }
    run_ends.push_back(n);
  }
  // Each slice is ascending once checked: the union merges them (no sort).
  const size_t length = mergeAscendingRuns(global, run_ends.data(), run_ends.size());
  finishUnionPlan(length, bad, plan);
  return scclSuccess;
}

}  // namespace sccl::cpu
