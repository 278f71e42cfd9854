// The CPU backend's plan of the device-resident union call (kernels.h, planUnion): the header
// checks are kernels/shared/union_plan.h's, which the CUDA backend runs too; the union is a
// pairwise merge of the checked (ascending) slices and the removal of repeats, as the host
// reduction's global list.
#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/shared/union_plan.h"

namespace sccl::cpu {

scclResult_t planUnion(const uint64_t* slots, const GatherPlanParams& params, size_t capacity,
                       const uint64_t* ranges, int64_t* global, uint64_t* plan) {
  planUnionHeaders(slots, params, capacity, ranges, plan);
  if (plan[kPlanStatus] != kPlanOk) return scclSuccess;
  uint32_t bad = kNoIndexFault;
  size_t n = 0;
  // Each slice is ascending once checked: the union merges the n runs pairwise (ceil(log2 n)
  // rounds, each moving every entry once) instead of sorting them all.
  thread_local std::vector<size_t> runs;
  runs.assign(1, 0);
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
    runs.push_back(n);
  }
  // Each round merges adjacent runs from one buffer into the other (scratch kept per thread).
  thread_local std::vector<int64_t> scratch;
  if (scratch.size() < n) scratch.resize(n);
  int64_t* from = global;
  int64_t* to = scratch.data();
  size_t nruns = runs.size() - 1;
  while (nruns > 1) {
    size_t merged = 0;
    for (size_t first = 0; first < nruns; first += 2, ++merged) {
      const size_t begin = runs[first], middle = runs[std::min(first + 1, nruns)],
                   end = runs[std::min(first + 2, nruns)];
      std::merge(from + begin, from + middle, from + middle, from + end, to + begin);
      runs[merged] = begin;
    }
    runs[merged] = n;
    nruns = merged;
    std::swap(from, to);
  }
  if (from != global) std::copy_n(from, n, global);
  const size_t length = size_t(std::unique(global, global + n) - global);
  finishUnionPlan(length, bad, plan);
  return scclSuccess;
}

}  // namespace sccl::cpu
