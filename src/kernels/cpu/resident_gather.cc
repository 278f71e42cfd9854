// The CPU backend's kernels of the device-resident gather call (kernels.h, "The device-resident
// gather call"): the plan and the slice rule are kernels/shared/gather_plan.h's, which the CUDA
// backend runs too; the selection is selectAbove's.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/cpu_kernels.h"

namespace sccl::cpu {

scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                               double threshold, size_t n, int64_t* idx, size_t padded) {
  size_t found = 0;
  if (n > 0) SCCL_CHECK(selectAbove(x, dtype, begin, end, threshold, idx, nullptr, n, &found));
  if (found != n) {
    return fail(scclInternalError,
                "resident gather: %zu entries at or above the threshold, the plan counted %zu",
                found, n);
  }
  std::fill(idx + n, idx + padded, int64_t{-1});
  return scclSuccess;
}

scclResult_t planGather(const uint64_t* records, const GatherPlanParams& params,
                        const uint64_t* ranges, const uint32_t* fault, uint64_t* plan) {
  planGatherCall(records, params, ranges, *fault, plan);
  return scclSuccess;
}

scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                      const uint64_t* plan, const uint64_t* ranges, int64_t* global,
                                      uint32_t* fault) {
  for (size_t r = 0; r < nranks; ++r) {
    const uint64_t k = plan[kGatherPlanHeaderWords + 2 * r];
    const uint64_t offset = plan[kGatherPlanHeaderWords + 2 * r + 1];
    const int64_t* slice = gathered + r * slot;
    for (uint64_t j = 0; j < k; ++j) {
      const bool valid = sliceEntryValid(slice, j, ranges[2 * r], ranges[2 * r + 1]);
      global[offset + j] = valid ? slice[j] : 0;
      if (!valid) *fault = std::min<uint32_t>(*fault, uint32_t(r));
    }
  }
  return scclSuccess;
}

}  // namespace sccl::cpu
