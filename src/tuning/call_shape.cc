#include "tuning/call_shape.h"

#include <algorithm>
#include <cmath>

#include "estimators/threshold_estimator.h"

namespace sccl {
namespace {

uint64_t clampedCount(double value, uint64_t count) {
  if (!(value > 0)) return 0;
  return std::min<uint64_t>(count, uint64_t(std::ceil(value)));
}

}  // namespace

CallShape predictCallShape(const ResolvedSparseConfig& c, uint64_t count, scclDataType_t dtype,
                           int nranks, const ShapeAssumptions& a) {
  CallShape s;
  s.count = count;
  s.dtype = dtype;
  s.nranks = nranks;
  s.k_target = targetSelectionCount(c.density, count);
  const double k = double(s.k_target);
  const double n = double(nranks);
  if (c.reduction == "sketch") {
    const uint64_t block = uint64_t(c.sketch_block_size);
    s.k_max = std::min<uint64_t>(count, (s.k_target + block - 1) / block * block);
    s.k_global = s.k_max;
    // The ranks' marked elements together, as for whole-vector selection below.
    if (s.k_max == 0) return s;
    const double d = double(s.k_max) / double(count);
    const double independent = double(count) * (1.0 - std::pow(1.0 - d, n)) / double(s.k_max);
    const double factor = a.union_factor > 0 ? std::clamp(a.union_factor, 1.0, n) : independent;
    s.k_union = clampedCount(factor * double(s.k_max), count);
  } else if (c.search == "micro" || c.search == "exdyna") {
    s.k_global = s.k_target;
    s.k_max = clampedCount(std::max(1.0, a.gather_inflation) * k / n, count);
  } else if (c.search == "leader") {
    s.k_sole = s.k_target;
    s.k_global = s.k_target;
    s.k_max = s.k_target;
  } else {
    const double d = k / double(count);
    const double independent = double(count) * (1.0 - std::pow(1.0 - d, n)) / k;
    const double factor = a.union_factor > 0 ? std::clamp(a.union_factor, 1.0, n) : independent;
    s.k_max = s.k_target;
    s.k_global = clampedCount(factor * k, count);
  }
  return s;
}

}  // namespace sccl
