// Check pass of sparse_allreduce_perf (the models are described in check.h).
#include "sparse/check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/data.h"
#include "common/options.h"
#include "sparse/device_calls.h"

namespace sccl_perf {
namespace {

enum class Model { kDense, kTopK, kLeaderTopK, kThreshold, kMicro, kSubset, kSketch, kRanksAgree };

Model modelOf(const scclSparseConfig_t& config) {
  const std::string name = config.algorithm;
  // The node sums select and add in another order than any flat model: the ranks' bits only.
  if (config.hierarchy != nullptr && std::string(config.hierarchy) == "node")
    return Model::kRanksAgree;
  if (name == "s2" && config.reduction == nullptr) return Model::kSketch;
  if (!isPlainPreset(config)) return Model::kSubset;
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

// -g 1: the call on the device buffers (scclAllReduce when sp is null), output copied to c.recv.
void runOnDevice(const CheckCase& c, scclSparsifier_t sp) {
  c.device->upload(c.pool.iteration(0));
  c.device->call(sp, c.options.op, c.rank.comm);
  c.device->download(c.recv);
}

CallFacts runFirstCall(const CheckCase& c, const scclSparseConfig_t& config) {
  const scclDataType_t dtype = c.options.common.dtype;
  const scclComm_t comm = c.rank.comm;
  if (c.device != nullptr && std::string(config.algorithm) == "dense") {
    runOnDevice(c, nullptr);
    CallFacts facts;  // the dense preset's: every rank selects every index
    facts.k_target = facts.k_global = c.count;
    facts.k_sum = uint64_t(c.count) * uint64_t(c.rank.nranks);
    return facts;
  }
  Sparsifier sp = createSparsifier(c.rank, c.count, dtype, config);
  scclSparseStats_t stats{};
  stats.size = sizeof(stats);
  // A stream-ordered call on device buffers (the :graph rows) leaves in its statistics the
  // threshold of the next call, updated on the device; the first call runs at the one a fresh
  // sparsifier reports.
  const bool next_threshold = c.device != nullptr && config.streamOrdered != 0;
  double first_threshold = 0;
  if (next_threshold) {
    check(scclSparsifierGetStats(sp.get(), &stats), comm, "scclSparsifierGetStats");
    first_threshold = stats.threshold;
  }
  if (c.device != nullptr) {
    runOnDevice(c, sp.get());
  } else {
    check(scclSparseAllreduce(c.pool.iteration(0), c.recv, c.count, dtype, c.options.op, sp.get(),
                              comm, nullptr),
          comm, "scclSparseAllreduce (check)");
  }
  check(scclSparsifierGetStats(sp.get(), &stats), comm, "scclSparsifierGetStats");
  std::vector<uint64_t> counts(static_cast<size_t>(c.rank.nranks));
  check(scclSparsifierGetRankCounts(sp.get(), counts.data(), c.rank.nranks), comm,
        "scclSparsifierGetRankCounts");
  CallFacts facts;
  facts.threshold = next_threshold ? first_threshold : stats.threshold;
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
      g[q] = c.pool.firstGradient(int(q), c.scale, i);
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

// --- s2 ---

// This rank's accumulator (the gradient widened to float32, or float64) at iteration t.
std::vector<double> accOf(const CheckCase& c, uint64_t t) {
  std::vector<double> acc(c.count);
  const void* grad = c.pool.iteration(t);
  for (size_t i = 0; i < c.count; ++i) acc[i] = loadAsDouble(grad, c.options.common.dtype, i);
  return acc;
}

// The blocks this rank marks: top-K by L2 norm among non-zero blocks (ties to the lower block),
// K = min(blocks, max(1, ceil(k / B))), or every non-zero block.
std::vector<uint8_t> ownBlocks(const std::vector<double>& acc, const scclSparseConfig_t& config,
                               uint64_t k) {
  const size_t block = size_t(config.sketchBlockSize), count = acc.size();
  const size_t blocks = count == 0 ? 0 : (count - 1) / block + 1;
  std::vector<uint8_t> marks(blocks, 0);
  std::vector<double> norm(blocks, 0.0);
  std::vector<size_t> candidates;
  const bool nonzero = std::strcmp(config.sketchBlockSelection, "nonzero") == 0;
  for (size_t b = 0; b < blocks; ++b) {
    bool any = false;
    for (size_t i = b * block; i < std::min(count, (b + 1) * block); ++i) {
      norm[b] += acc[i] * acc[i];
      any = any || acc[i] != 0;
    }
    if (nonzero) marks[b] = any ? 1 : 0;
    if (!nonzero && norm[b] > 0) candidates.push_back(b);
  }
  if (nonzero) return marks;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return norm[a] > norm[b]; });
  const size_t keep = std::min<size_t>(blocks, std::max<uint64_t>(1, (k + block - 1) / block));
  candidates.resize(std::min(candidates.size(), keep));
  for (size_t b : candidates) marks[b] = 1;
  return marks;
}

// The union of every rank's marks (an int32 sum, then non-zero).
std::vector<uint8_t> unitedBlocks(const CheckCase& c, const std::vector<uint8_t>& mine) {
  std::vector<int32_t> sum(mine.begin(), mine.end());
  if (!sum.empty()) {
    check(
        scclAllReduce(sum.data(), sum.data(), sum.size(), scclInt32, scclSum, c.rank.comm, nullptr),
        c.rank.comm, "scclAllReduce (bitmap)");
  }
  std::vector<uint8_t> united(sum.size());
  for (size_t b = 0; b < sum.size(); ++b) united[b] = sum[b] != 0 ? 1 : 0;
  return united;
}

// The s2 output of a first call from the building blocks, in the accumulator type (as doubles).
struct SketchExpectation {
  std::vector<double> output;  // decoded, divided by n for avg
  std::vector<double> target;  // exact sum over ranks of the marked gradients
  uint64_t united_elements = 0;
};

template <typename T>
SketchExpectation expectSketch(const CheckCase& c, const scclSparseConfig_t& config, uint64_t k,
                               uint64_t t, bool want_target) {
  const scclDataType_t acc_type = sizeof(T) == 8 ? scclFloat64 : scclFloat32;
  const std::vector<double> acc = accOf(c, t);
  const std::vector<uint8_t> mine = ownBlocks(acc, config, k);
  const std::vector<uint8_t> united = unitedBlocks(c, mine);
  const size_t block = size_t(config.sketchBlockSize);
  const int rows = config.sketchRows;
  // The preset's width rule: lambda k for top-K blocks; lambda max_r k_r (this call's elements
  // in each rank's marked blocks) for "nonzero" selection.
  uint64_t width_basis = k;
  if (std::string(config.sketchBlockSelection) == "nonzero") {
    uint64_t marked = 0;
    for (size_t b = 0; b < mine.size(); ++b)
      if (mine[b]) marked += std::min(c.count, (b + 1) * block) - b * block;
    width_basis = 0;
    for (double m : c.rank.allGather({double(marked)}))
      width_basis = std::max(width_basis, uint64_t(m));
  }
  const size_t width =
      std::max<size_t>(1, size_t(std::ceil(config.sketchLambda * double(width_basis))));
  const uint64_t seed = uint64_t(config.sketchSeed);
  std::vector<T> values(std::max<size_t>(1, c.count)), table(size_t(rows) * width, T(0));
  for (size_t i = 0; i < c.count; ++i) values[i] = static_cast<T>(acc[i]);
  const scclComm_t comm = c.rank.comm;
  check(scclCountSketchEncode(values.data(), c.count, acc_type, block, mine.data(), rows, width,
                              seed, table.data(), nullptr),
        comm, "scclCountSketchEncode");
  check(scclAllReduce(table.data(), table.data(), table.size(), acc_type, scclSum, comm, nullptr),
        comm, "scclAllReduce (table)");
  std::vector<T> decoded(std::max<size_t>(1, c.count));
  check(scclCountSketchDecode(table.data(), acc_type, rows, width, seed, c.count, block,
                              united.data(), decoded.data(), nullptr),
        comm, "scclCountSketchDecode");
  SketchExpectation e;
  e.output.resize(c.count);
  const int n = c.rank.nranks;
  for (size_t i = 0; i < c.count; ++i) {
    T v = decoded[i];
    if (c.options.op == scclAvg && n != 1) v = v / static_cast<T>(n);
    e.output[i] = double(v);
  }
  for (size_t b = 0; b < united.size(); ++b)
    if (united[b]) e.united_elements += std::min(c.count, (b + 1) * block) - b * block;
  if (want_target) {
    std::vector<double> masked(std::max<size_t>(1, c.count), 0.0);
    for (size_t i = 0; i < c.count; ++i) masked[i] = mine[i / block] ? acc[i] : 0.0;
    if (c.count > 0) {
      check(
          scclAllReduce(masked.data(), masked.data(), c.count, scclFloat64, scclSum, comm, nullptr),
          comm, "scclAllReduce (target)");
    }
    if (c.options.op == scclAvg)
      for (double& v : masked) v /= double(n);
    masked.resize(c.count);
    e.target = std::move(masked);
  }
  return e;
}

SketchExpectation expectSketch(const CheckCase& c, const scclSparseConfig_t& config, uint64_t k,
                               uint64_t t, bool want_target) {
  return c.options.common.dtype == scclFloat64 ? expectSketch<double>(c, config, k, t, want_target)
                                               : expectSketch<float>(c, config, k, t, want_target);
}

uint64_t checkSketchCall(const CheckCase& c, const scclSparseConfig_t& config,
                         const CallFacts& facts) {
  const SketchExpectation e = expectSketch(c, config, facts.k_target, 0, false);
  const scclDataType_t dtype = c.options.common.dtype;
  const size_t width = dtypeSize(dtype);
  unsigned char expected[8];
  double wrong = 0;
  for (size_t i = 0; i < c.count; ++i) {
    storeValue(expected, dtype, 0, e.output[i]);
    const unsigned char* got = static_cast<const unsigned char*>(c.recv) + i * width;
    wrong += std::memcmp(got, expected, width) != 0 ? 1 : 0;
  }
  wrong += e.united_elements != facts.k_global ? 1 : 0;
  double total = 0;
  for (double w : c.rank.allGather({wrong})) total += w;
  return static_cast<uint64_t>(total);
}

}  // namespace

double sketchDecodeError(const CheckCase& c, int calls) {
  scclSparseConfig_t config = rowConfig(c.options, c.algorithm, c.density);
  config.errorFeedback = 0;
  const scclDataType_t dtype = c.options.common.dtype;
  const scclComm_t comm = c.rank.comm;
  Sparsifier sp = createSparsifier(c.rank, c.count, dtype, config);
  scclSparseStats_t stats{};
  stats.size = sizeof(stats);
  double error_sq = 0, target_sq = 0;
  for (int t = 0; t < calls; ++t) {
    check(scclSparseAllreduce(c.pool.iteration(uint64_t(t)), c.recv, c.count, dtype, c.options.op,
                              sp.get(), comm, nullptr),
          comm, "scclSparseAllreduce (decode error)");
    check(scclSparsifierGetStats(sp.get(), &stats), comm, "scclSparsifierGetStats");
    const SketchExpectation e = expectSketch(c, config, stats.kTarget, uint64_t(t), true);
    for (size_t i = 0; i < c.count; ++i) {
      const double d = loadAsDouble(c.recv, dtype, i) - e.target[i];
      error_sq += d * d;
      target_sq += e.target[i] * e.target[i];
    }
  }
  return target_sq > 0 ? std::sqrt(error_sq / target_sq) : 0.0;
}

uint64_t checkFirstCall(const CheckCase& c) {
  const scclSparseConfig_t config = rowConfig(c.options, c.algorithm, c.density);
  const Model model = modelOf(config);
  const CallFacts facts = runFirstCall(c, config);
  if (model == Model::kRanksAgree) return ranksDifferingFromRankZero(c);
  if (model == Model::kSketch)
    return ranksDifferingFromRankZero(c) + checkSketchCall(c, config, facts);
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
    // Exclusive partitions (ExDyna, the sync-free presets): k' is the sum of the k_i; selections
    // that may overlap (whole-vector search, SIDCo): the union, at most the sum.
    const std::string preset = config.algorithm;
    const bool exclusive =
        preset == "exdyna" || preset == "micro_sync_free" || preset == "exdyna_sync_free";
    if (isPlainPreset(config) &&
        (exclusive ? facts.k_sum != facts.k_global : facts.k_sum < facts.k_global))
      wrong += 1;
  } else {
    wrong += static_cast<uint64_t>(std::fabs(total.selected - k_global));
  }
  return wrong;
}

}  // namespace sccl_perf
