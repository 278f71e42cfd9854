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
//
// Embedding mode (-I embedding, the S2 Reducer's setting): the vector is a table of
// rows = ceil(count / W) rows of W elements (-R W). At iteration t rank r draws
// m = max(1, round(d * rows)) rows from a Zipf(s) law over the rows (row j with weight
// 1 / (j + 1)^s, s = 1.05 as word frequencies; every rank the same law, so the popular rows are
// shared: high overlap), from the counter (seed, r, t, draw); the touched rows carry the Laplace
// values above, every other element is 0 (about 1 - d of the rows, fewer with repeated draws).
// Eight such gradients are generated per rank and size (untimed) and iteration t uses t mod 8.
//
// Trace mode (-I trace:DIR): real gradients from files (sparse/trace_inputs.h), converted to the
// dtype once per size; the scale is not applied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/team.h"
#include "sparse/trace_inputs.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {

// b for `count` elements at target density d (k = max(1, floor(d * count)), as the library).
double gradientScale(size_t count, double density);

// The kind of synthetic gradient.
struct InputShape {
  bool embedding = false;  // -I embedding
  size_t row_width = 64;   // -R: elements per embedding row
  double zipf_s = 1.05;
  int nranks = 1;  // every rank's touched rows of iteration 0 are kept for the check pass
  const TraceSet* traces = nullptr;  // -I trace:DIR (outlives the pool)
};

class GradientPool {
 public:
  static constexpr size_t kPoolSlack = size_t{1} << 20;
  static constexpr uint64_t kEmbeddingPeriod = 8;

  GradientPool(uint64_t seed, int rank, scclDataType_t dtype, InputShape shape = {});

  // Generates the gradients of `count` elements at scale b and density d (untimed).
  void generate(ThreadTeam& team, size_t count, double scale, double density);

  // The send buffer of iteration t (count elements, valid until the next generate()).
  const void* iteration(uint64_t t) const;

  // Element i of rank r's gradient at iteration 0, as the dtype holds it (exact in a double).
  double firstGradient(int rank, double scale, size_t i) const;

  const InputShape& shape() const { return shape_; }

 private:
  // The rows rank r touches at iteration t (0/1 per row).
  std::vector<uint8_t> touchedRows(int rank, uint64_t t) const;

  uint64_t seed_;
  int rank_;
  scclDataType_t dtype_;
  InputShape shape_;
  size_t capacity_ = 0;
  std::unique_ptr<unsigned char[]> pool_;
  // Embedding mode.
  size_t count_ = 0;
  double density_ = 0;
  std::vector<double> zipf_cdf_;
  std::vector<std::vector<uint8_t>> first_rows_;  // [rank][row] at iteration 0
  // Embedding and trace modes: the gradients of every iteration, precomputed in the dtype.
  std::vector<std::unique_ptr<unsigned char[]>> prepared_;
};

}  // namespace sccl_perf
