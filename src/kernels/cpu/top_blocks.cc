// S2's "topk" block selection on the CPU (KernelBackend::markTopBlocks): the blocks of positive
// squared norm, the max_blocks largest of them by one nth_element (a NaN norm as +inf, ties to
// the lower block index), marked in the bitmap. The CUDA backend finds the same blocks with a
// radix select on the device (cuda/kernels/top_blocks.cu).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_kernels.h"

namespace sccl::cpu {

scclResult_t markTopBlocks(const double* sq, size_t blocks, size_t max_blocks, uint8_t* marks,
                           double* cutoff_sq) {
  SCCL_REQUIRE_ARG(cutoff_sq != nullptr && (blocks == 0 || (sq != nullptr && marks != nullptr)),
                   "markTopBlocks: null array");
  *cutoff_sq = 0;
  if (blocks == 0) return scclSuccess;
  auto norm = [sq](uint64_t b) {
    const double v = sq[b];
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  };
  // Reused by the thread's next call: no allocation in the steady state of a training loop.
  thread_local std::vector<uint64_t> order;
  order.clear();
  for (size_t b = 0; b < blocks; ++b) {
    if (norm(b) > 0) order.push_back(b);
  }
  std::fill(marks, marks + blocks, uint8_t{0});
  const size_t keep = std::min(order.size(), max_blocks);
  if (keep == 0) return scclSuccess;
  auto larger = [&](uint64_t a, uint64_t b) {
    return norm(a) > norm(b) || (norm(a) == norm(b) && a < b);
  };
  // nth_element leaves the first keep - 1 entries not after the keep-th: exactly the top keep.
  std::nth_element(order.begin(), order.begin() + long(keep - 1), order.end(), larger);
  *cutoff_sq = norm(order[keep - 1]);
  for (size_t j = 0; j < keep; ++j) marks[order[j]] = 1;
  return scclSuccess;
}

}  // namespace sccl::cpu
