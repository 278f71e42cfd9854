// Check pass of sparse_allreduce_perf (the models are described in check.h).
#include "sparse/check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/data.h"
#include "common/options.h"

namespace sccl_perf {
namespace {

enum class Model { kDense, kTopK, kLeaderTopK, kThreshold, kMicro, kSubset };

Model modelOf(const scclSparseConfig_t& config) {
  if (!isPlainPreset(config)) return Model::kSubset;
  const std::string name = config.algorithm;
  if (name == "dense") return Model::kDense;
  if (name == "topk") return Model::kTopK;
  if (name == "cltk") return Model::kLeaderTopK;
  if (name == "hard_threshold") return Model::kThreshold;
  if (name == "micro") return Model::kMicro;
  return Model::kSubset;
}

// What the library reports about the checked call.
struct CallFacts {
  double threshold = 0;
  uint64_t k_target = 0, k_global = 0, k_sum = 0;
};

CallFacts runFirstCall(const CheckCase& c, const scclSparseConfig_t& config) {
  const scclDataType_t dtype = c.options.common.dtype;
  const scclComm_t comm = c.rank.comm;
  Sparsifier sp = createSparsifier(c.rank, c.count, dtype, config);
  check(scclSparseAllreduce(c.pool.iteration(0), c.recv, c.count, dtype, c.options.op, sp.get(),
                            comm, nullptr),
        comm, "scclSparseAllreduce (check)");
  scclSparseStats_t stats{};
  stats.size = sizeof(stats);
  check(scclSparsifierGetStats(sp.get(), &stats), comm, "scclSparsifierGetStats");
  std::vector<uint64_t> counts(static_cast<size_t>(c.rank.nranks));
  check(scclSparsifierGetRankCounts(sp.get(), counts.data(), c.rank.nranks), comm,
        "scclSparsifierGetRankCounts");
  CallFacts facts;
  facts.threshold = stats.threshold;
  facts.k_target = stats.kTarget;
  facts.k_global = stats.kGlobal;
  for (uint64_t k : counts) facts.k_sum += k;
  return facts;
}

// Ranks whose whole output differs from rank 0's (FNV-1a 64 of the bytes).
uint64_t ranksDifferingFromRankZero(const CheckCase& c) {
  const auto* bytes = static_cast<const unsigned char*>(c.recv);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < c.count * dtypeSize(c.options.common.dtype); ++i) {
    hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  }
  std::vector<uint64_t> all(static_cast<size_t>(c.rank.nranks));
  check(scclAllGather(&hash, all.data(), 1, scclUint64, c.rank.comm, nullptr), c.rank.comm,
        "scclAllGather");
  return static_cast<uint64_t>(
      std::count_if(all.begin(), all.end(), [&](uint64_t h) { return h != all[0]; }));
}

// A rank's exact top-k of its whole gradient: the k-th magnitude and the last index taken at it
// (ties go to the lower indices). T is the accumulator type, in which |x| is exact.
struct Cutoff {
  double value = 0;
  double last_tie = -1;
};

template <typename T>
Cutoff exactCutoff(const void* grad, scclDataType_t dtype, size_t count, uint64_t k) {
  auto magnitude = [&](size_t i) { return std::fabs(loadAsDouble(grad, dtype, i)); };
  std::vector<T> magnitudes(count);
  for (size_t i = 0; i < count; ++i) magnitudes[i] = static_cast<T>(magnitude(i));
  std::nth_element(magnitudes.begin(), magnitudes.begin() + long(count - k), magnitudes.end());
  Cutoff cutoff;
  cutoff.value = magnitudes[count - k];
  size_t above = 0;
  for (size_t i = 0; i < count; ++i) above += magnitude(i) > cutoff.value ? 1 : 0;
  size_t ties = k - above;  // >= 1: at most k - 1 magnitudes exceed the k-th largest
  for (size_t i = 0; i < count && ties > 0; ++i) {
    if (magnitude(i) == cutoff.value && --ties == 0) cutoff.last_tie = static_cast<double>(i);
  }
  return cutoff;
}

std::vector<Cutoff> gatherCutoffs(const CheckCase& c, Model model, uint64_t k) {
  Cutoff mine;
  // Only the leader selects in CLT-k's first call; the others need not sort anything.
  if (model == Model::kTopK || c.rank.rank == 0) {
    const void* grad = c.pool.iteration(0);
    const scclDataType_t dtype = c.options.common.dtype;
    mine = dtype == scclFloat64 ? exactCutoff<double>(grad, dtype, c.count, k)
                                : exactCutoff<float>(grad, dtype, c.count, k);
  }
  std::vector<double> all = c.rank.allGather({mine.value, mine.last_tie});
  std::vector<Cutoff> cutoffs(static_cast<size_t>(c.rank.nranks));
  for (size_t r = 0; r < cutoffs.size(); ++r) cutoffs[r] = {all[2 * r], all[2 * r + 1]};
  return cutoffs;
}

// The partition that rank p searches at iteration 0 is partition p (MiCRO's layout).
size_t microOwner(size_t i, size_t count, size_t n) {
  const size_t base = count / n, extra = count % n, big = extra * (base + 1);
  return i < big ? i / (base + 1) : extra + (i - big) / base;
}

bool inTopK(double magnitude, size_t i, const Cutoff& cutoff) {
  return magnitude > cutoff.value || (magnitude == cutoff.value && double(i) <= cutoff.last_tie);
}

bool selectedAt(Model model, size_t i, size_t count, const std::vector<double>& g,
                const CallFacts& facts, const std::vector<Cutoff>& cutoffs) {
  auto reaches = [&](double x) { return !(std::fabs(x) < facts.threshold); };
  switch (model) {
    case Model::kDense: return true;
    case Model::kLeaderTopK: return inTopK(std::fabs(g[0]), i, cutoffs[0]);
    case Model::kMicro: return reaches(g[microOwner(i, count, g.size())]);
    case Model::kTopK:
      for (size_t r = 0; r < g.size(); ++r) {
        if (inTopK(std::fabs(g[r]), i, cutoffs[r])) return true;
      }
      return false;
    default: return std::any_of(g.begin(), g.end(), reaches);
  }
}

double roundTo(double value, scclDataType_t dtype) {
  unsigned char element[8];
  storeValue(element, dtype, 0, value);
  return loadAsDouble(element, dtype, 0);
}

// The library's value at a selected index: rank-order sum in the accumulator type, averaged.
double reduced(const std::vector<double>& g, scclDataType_t dtype, scclRedOp_t op, bool dense) {
  const double n = static_cast<double>(g.size());
  if (dtype == scclFloat64) {
    double sum = g[0];
    for (size_t r = 1; r < g.size(); ++r) sum += g[r];
    return op == scclAvg ? sum / n : sum;
  }
  float sum = static_cast<float>(g[0]);
  for (size_t r = 1; r < g.size(); ++r) sum += static_cast<float>(g[r]);
  if (op == scclSum) return sum;
  // The dense all-reduce rounds the sum to the 16-bit type before dividing; the sparse path
  // divides in float32 and rounds once.
  if (dense && dtype != scclFloat32) return static_cast<float>(roundTo(sum, dtype)) / float(n);
  return sum / static_cast<float>(n);
}

struct SliceCounts {
  double wrong = 0, selected = 0, nonzero = 0;
};

SliceCounts checkSlice(const CheckCase& c, Model model, const CallFacts& facts,
                       const std::vector<Cutoff>& cutoffs, bool thresholded) {
  const SparseOptions& o = c.options;
  const scclDataType_t dtype = o.common.dtype;
  const size_t width = dtypeSize(dtype), n = static_cast<size_t>(c.rank.nranks);
  const size_t r = static_cast<size_t>(c.rank.rank);
  unsigned char zero[8], expected[8];
  storeValue(zero, dtype, 0, 0.0);
  std::vector<double> g(n);
  SliceCounts counts;
  for (size_t i = c.count * r / n; i < c.count * (r + 1) / n; ++i) {
    for (size_t q = 0; q < n; ++q) {
      g[q] = GradientPool::firstGradient(o.common.seed, int(q), dtype, c.scale, i);
    }
    const unsigned char* got = static_cast<const unsigned char*>(c.recv) + i * width;
    storeValue(expected, dtype, 0, reduced(g, dtype, o.op, model == Model::kDense));
    if (model == Model::kSubset) {
      if (std::memcmp(got, zero, width) == 0) continue;  // not selected
      counts.nonzero += 1;
      bool reachable = !thresholded || std::any_of(g.begin(), g.end(), [&](double x) {
        return !(std::fabs(x) < facts.threshold);
      });
      counts.wrong += std::memcmp(got, expected, width) != 0 || !reachable ? 1 : 0;
      continue;
    }
    const bool selected = selectedAt(model, i, c.count, g, facts, cutoffs);
    counts.selected += selected ? 1 : 0;
    counts.wrong += std::memcmp(got, selected ? expected : zero, width) != 0 ? 1 : 0;
  }
  return counts;
}

}  // namespace

uint64_t checkFirstCall(const CheckCase& c) {
  const scclSparseConfig_t config = rowConfig(c.options, c.algorithm, c.density);
  const Model model = modelOf(config);
  const CallFacts facts = runFirstCall(c, config);
  uint64_t wrong = ranksDifferingFromRankZero(c);
  std::vector<Cutoff> cutoffs;
  if (model == Model::kTopK || model == Model::kLeaderTopK) {
    cutoffs = gatherCutoffs(c, model, facts.k_target);
  }
  const std::string estimator = estimatorOf(config);
  const bool thresholded = estimator == "scaling" || estimator == "fixed";
  SliceCounts mine = checkSlice(c, model, facts, cutoffs, thresholded);
  std::vector<double> all = c.rank.allGather({mine.wrong, mine.selected, mine.nonzero});
  SliceCounts total;
  for (size_t r = 0; r < all.size(); r += 3) {
    total.wrong += all[r];
    total.selected += all[r + 1];
    total.nonzero += all[r + 2];
  }
  wrong += static_cast<uint64_t>(total.wrong);
  const double k_global = static_cast<double>(facts.k_global);
  if (model == Model::kSubset) {
    wrong += static_cast<uint64_t>(std::max(0.0, total.nonzero - k_global));
    // Exclusive partitions (ExDyna): k' is the sum of the k_i; selections that may overlap
    // (whole-vector search, SIDCo): the union, at most the sum.
    const bool exclusive = std::string(config.algorithm) == "exdyna";
    if (isPlainPreset(config) &&
        (exclusive ? facts.k_sum != facts.k_global : facts.k_sum < facts.k_global))
      wrong += 1;
  } else {
    wrong += static_cast<uint64_t>(std::fabs(total.selected - k_global));
  }
  return wrong;
}

}  // namespace sccl_perf
