// Synthetic gradients for sparse_allreduce_perf.
//
// Rank r's gradient at iteration t is a function of (seed, r, t, index) only:
//   g_r,t[i] = pool_r[offset(t) + i],   pool_r[j] = b * Laplace(0, 1)(rankSeed(seed, r), j)
// rounded to the dtype, with offset(0) = 0 and offset(t > 0) a hash of (seed, t) below
// kPoolSlack. Every iteration therefore sees fresh heavy-tailed values at every index (what
// thresholds and densities need to behave as on gradients), yet a call costs no generation time:
// the send buffer is a window into a pool generated once per size and density. Any rank can
// rebuild any other rank's first gradient element by element (the check pass does).
//
// The scale b is chosen so that the estimators' initial threshold 1/(2 sqrt(k)) selects exactly
// the target density of one gradient: P(|x| >= t) = exp(-t / b) = d gives
// b = 1 / (2 sqrt(k) ln(1/d)). The first call of hard_threshold and MiCRO thus lands on the
// target; error feedback then grows the accumulated values and the threshold must follow, as in
// training.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/team.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {

// b for `count` elements at target density d (k = max(1, floor(d * count)), as the library).
double gradientScale(size_t count, double density);

class GradientPool {
 public:
  static constexpr size_t kPoolSlack = size_t{1} << 20;

  GradientPool(uint64_t seed, int rank, scclDataType_t dtype);

  // Generates the pool for gradients of `count` elements at scale b (untimed).
  void generate(ThreadTeam& team, size_t count, double scale);

  // The send buffer of iteration t (count elements, valid until the next generate()).
  const void* iteration(uint64_t t) const;

  // Element i of rank r's gradient at iteration 0, as the dtype holds it (exact in a double).
  static double firstGradient(uint64_t seed, int rank, scclDataType_t dtype, double scale,
                              size_t i);

 private:
  uint64_t seed_;
  int rank_;
  scclDataType_t dtype_;
  size_t capacity_ = 0;
  std::unique_ptr<unsigned char[]> pool_;
};

}  // namespace sccl_perf
