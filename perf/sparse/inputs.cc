// Gradient pools: a window per iteration into one buffer of seeded Laplace values.
#include "sparse/inputs.h"

#include <algorithm>
#include <cmath>

#include "common/data.h"
#include "common/options.h"

namespace sccl_perf {
namespace {

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Distinct ranks get unrelated streams; the same (seed, rank) always the same one.
uint64_t rankSeed(uint64_t seed, int rank) {
  return mix(seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(rank) + 1));
}

size_t offsetOf(uint64_t seed, uint64_t t) {
  return t == 0 ? 0 : static_cast<size_t>(mix(seed ^ mix(t)) % GradientPool::kPoolSlack);
}

}  // namespace

double gradientScale(size_t count, double density) {
  const double k = std::max(1.0, std::floor(density * static_cast<double>(count)));
  // Near d = 1, ln(1/d) goes to 0 and b would explode; any threshold selects nearly all there.
  const double log_inverse = std::max(std::log(1.0 / density), 0.1);
  return 1.0 / (2.0 * std::sqrt(k) * log_inverse);
}

GradientPool::GradientPool(uint64_t seed, int rank, scclDataType_t dtype)
    : seed_(seed), rank_(rank), dtype_(dtype) {}

void GradientPool::generate(ThreadTeam& team, size_t count, double scale) {
  const size_t needed = count + kPoolSlack;
  if (needed > capacity_) {
    pool_.reset();  // free first: at 26M elements two pools at once would double the peak
    pool_.reset(new unsigned char[needed * dtypeSize(dtype_)]);
    capacity_ = needed;
  }
  fillLaplace(team, pool_.get(), dtype_, needed, rankSeed(seed_, rank_), 0, scale);
}

const void* GradientPool::iteration(uint64_t t) const {
  return pool_.get() + offsetOf(seed_, t) * dtypeSize(dtype_);
}

double GradientPool::firstGradient(uint64_t seed, int rank, scclDataType_t dtype, double scale,
                                   size_t i) {
  unsigned char element[8];
  storeValue(element, dtype, 0, scale * laplaceValue(rankSeed(seed, rank), i));
  return loadAsDouble(element, dtype, 0);
}

}  // namespace sccl_perf
