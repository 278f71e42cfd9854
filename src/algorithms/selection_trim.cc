#include "algorithms/selection_trim.h"

#include <algorithm>
#include <cmath>

namespace sccl {
namespace {

// value(j) = |x| of entry j; keep(j, k) moves entry j to position k.
template <typename T, typename Value, typename Move>
size_t trimWith(size_t n, size_t keep, T cutoff, Value value, Move move) {
  size_t above = 0;
  for (size_t j = 0; j < n; ++j) above += value(j) > cutoff;
  size_t equal_quota = keep > above ? keep - above : 0;
  size_t kept = 0;
  for (size_t j = 0; j < n; ++j) {
    T magnitude = value(j);
    bool take = magnitude > cutoff || (magnitude == cutoff && equal_quota > 0);
    if (magnitude == cutoff && take) --equal_quota;
    if (take) move(j, kept++);
  }
  return kept;
}

template <typename T>
size_t trimAlignedTyped(T* values, int64_t* idx, size_t n, size_t keep, T cutoff) {
  return trimWith<T>(
      n, keep, cutoff, [&](size_t j) { return std::fabs(values[j]); },
      [&](size_t from, size_t to) {
        idx[to] = idx[from];
        values[to] = values[from];
      });
}

}  // namespace

uint64_t densitySlackCap(uint64_t k_target, int nranks, double max_density_slack, uint64_t count) {
  if (!(max_density_slack >= 0)) return ~uint64_t{0};
  const double per_rank = double(k_target) / double(std::max(1, nranks));
  // Clamped to count in double first: ceil(+inf) or a value past 2^64 has no integer.
  const double cap = std::min(std::ceil(per_rank * (1.0 + max_density_slack)), double(count));
  return std::max<uint64_t>(uint64_t(cap), 1);
}

size_t trimAlignedSelection(void* values, scclDataType_t dtype, int64_t* idx, size_t n, size_t keep,
                            double cutoff) {
  if (n <= keep) return n;
  if (dtype == scclFloat64) {
    return trimAlignedTyped(static_cast<double*>(values), idx, n, keep, cutoff);
  }
  return trimAlignedTyped(static_cast<float*>(values), idx, n, keep, static_cast<float>(cutoff));
}

}  // namespace sccl
