#include "algorithms/selection_trim.h"

#include <cmath>

#include "core/error.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

template <typename T>
size_t trimTyped(const T* acc, int64_t* idx, size_t n, size_t keep, T cutoff) {
  size_t above = 0;
  for (size_t j = 0; j < n; ++j) above += std::fabs(acc[idx[j]]) > cutoff;
  size_t equal_quota = keep > above ? keep - above : 0;
  size_t kept = 0;
  for (size_t j = 0; j < n; ++j) {
    T magnitude = std::fabs(acc[idx[j]]);
    bool take = magnitude > cutoff || (magnitude == cutoff && equal_quota > 0);
    if (magnitude == cutoff && take) --equal_quota;
    if (take) idx[kept++] = idx[j];
  }
  return kept;
}

}  // namespace

size_t trimSelection(const void* acc, scclDataType_t acc_dtype, int64_t* idx, size_t n, size_t keep,
                     double cutoff) {
  if (n <= keep) return n;
  if (acc_dtype == scclFloat64) {
    return trimTyped(static_cast<const double*>(acc), idx, n, keep, cutoff);
  }
  return trimTyped(static_cast<const float*>(acc), idx, n, keep, static_cast<float>(cutoff));
}

scclResult_t cutoffAmongSelected(const void* acc, scclDataType_t acc_dtype, const int64_t* idx,
                                 size_t n, size_t cap, void* scratch, double* cutoff) {
  const KernelBackend& kernels = cpuKernels();
  SCCL_CHECK(kernels.gather(acc, acc_dtype, idx, n, scratch, nullptr));
  return kernels.kthLargestAbs(scratch, acc_dtype, 0, n, cap, cutoff, nullptr);
}

}  // namespace sccl
