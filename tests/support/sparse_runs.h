// Runs scclSparseAllreduce for several iterations on N in-process ranks and records, per
// iteration and rank, the output, the statistics, the rank counts and the residual (read through
// the library's internal sparsifier struct), for the main thread to check against a reference.
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "sparsifier/sparsifier.h"
#include "support/local_ranks.h"

namespace sccl_test {

// Gradient value of (rank, iteration, index): deterministic, no exact zeros, varied magnitudes.
inline float gradientValue(uint32_t seed, int rank, uint64_t iteration, size_t index) {
  uint64_t h = (uint64_t(seed) << 40) ^ (uint64_t(rank) << 32) ^
               (iteration * 0x9E3779B97F4A7C15ull) ^ (uint64_t(index) * 0xD6E8FEB86659FD93ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  double u = (double(h >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
  double magnitude = -std::log(u);                          // exponential: Laplace magnitudes
  return float((h & 1) ? magnitude : -magnitude) * 0.01f;
}

struct RankIteration {
  std::vector<float> output;
  std::vector<float> residual;
  std::vector<uint64_t> counts;
  scclSparseStats_t stats{};
  scclResult_t result = scclSuccess;
};

struct SparseRun {
  // [iteration][rank]
  std::vector<std::vector<RankIteration>> calls;
  std::vector<std::string> failures;
};

using GradientFn = std::function<float(int rank, uint64_t iteration, size_t index)>;

inline SparseRun runSparse(int nranks, size_t count, const scclSparseConfig_t& config,
                           int iterations, const GradientFn& gradient, scclRedOp_t op = scclSum,
                           bool in_place = false) {
  SparseRun run;
  run.calls.assign(size_t(iterations), std::vector<RankIteration>(size_t(nranks)));
  run.failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "scclSparsifierCreate"))
      return;
    std::vector<float> grad(count), out(count);
    for (int t = 0; t < iterations; ++t) {
      for (size_t i = 0; i < count; ++i) grad[i] = gradient(rank, uint64_t(t), i);
      RankIteration& record = run.calls[size_t(t)][size_t(rank)];
      float* recv = in_place ? grad.data() : out.data();
      record.result =
          scclSparseAllreduce(grad.data(), recv, count, scclFloat32, op, sp, comm, nullptr);
      record.output.assign(recv, recv + count);
      const float* residual = static_cast<const float*>(sp->residual.data());
      record.residual.assign(residual, residual + count);
      record.counts.resize(size_t(nranks));
      scclSparsifierGetRankCounts(sp, record.counts.data(), nranks);
      record.stats.size = sizeof(scclSparseStats_t);
      scclSparsifierGetStats(sp, &record.stats);
    }
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "scclSparsifierDestroy");
  });
  return run;
}

inline scclSparseConfig_t sparseConfig(const char* algorithm, double density) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = algorithm;
  config.density = density;
  return config;
}

}  // namespace sccl_test
