// scclSparseAllreduce in any gradient dtype (float16, bfloat16, float32, float64) on in-process
// ranks, recording per call and rank the output bytes, the residual (widened to double), the rank
// counts and the statistics. The model to compare with is BasicGatherReference<Acc> in
// support/sparse_reference.h (Acc = double for float64 gradients, whose residual is float64).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "support/sparse_reference.h"
#include "sparsifier/sparsifier.h"
#include "partition/search_space.h"
#include "support/local_ranks.h"
#include "support/typed_values.h"

namespace sccl_test {

struct TypedRankCall {
  scclResult_t result = scclSuccess;
  std::vector<unsigned char> output;  // count elements of the gradient dtype
  std::vector<double> residual;       // the float32 or float64 residual, widened
  std::vector<uint64_t> counts;
  scclSparseStats_t stats{};
};

struct TypedSparseRun {
  std::vector<std::vector<TypedRankCall>> calls;  // [call][rank]
  std::vector<std::string> failures;
};

// Rank r's gradient element i at call t as a double; stored in the run's dtype (rounded there).
using TypedGradientFn = std::function<double(int rank, uint64_t t, size_t index)>;

// The gradient actually passed: value rounded to dtype, read back as a double (exact widening).
inline double roundedGradient(scclDataType_t dtype, double value) {
  unsigned char bytes[8];
  storeValue(dtype, bytes, 0, value);
  return loadValue(dtype, bytes, 0);
}

inline TypedSparseRun runTypedSparse(int nranks, size_t count, scclDataType_t dtype,
                                     const scclSparseConfig_t& config, int iterations,
                                     const TypedGradientFn& gradient, scclRedOp_t op = scclSum,
                                     bool in_place = false) {
  TypedSparseRun run;
  run.calls.assign(size_t(iterations), std::vector<TypedRankCall>(static_cast<size_t>(nranks)));
  const size_t element = sccl::dataTypeSize(dtype);
  run.failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, dtype, &config), scclSuccess,
                         "scclSparsifierCreate"))
      return;
    std::vector<unsigned char> grad(std::max<size_t>(1, count * element)),
        out(std::max<size_t>(1, count * element), 0xA5);
    for (int t = 0; t < iterations; ++t) {
      for (size_t i = 0; i < count; ++i)
        storeValue(dtype, grad.data(), i, gradient(rank, uint64_t(t), i));
      TypedRankCall& record = run.calls[size_t(t)][size_t(rank)];
      void* recv = in_place ? grad.data() : out.data();
      record.result = scclSparseAllreduce(grad.data(), recv, count, dtype, op, sp, comm, nullptr);
      const auto* bytes = static_cast<const unsigned char*>(recv);
      record.output.assign(bytes, bytes + count * element);
      record.residual.resize(count);
      for (size_t i = 0; i < count; ++i)
        record.residual[i] = loadValue(sp->acc_dtype, sp->residual.data(), i);
      record.counts.resize(static_cast<size_t>(nranks));
      scclSparsifierGetRankCounts(sp, record.counts.data(), nranks);
      record.stats.size = sizeof(scclSparseStats_t);
      scclSparsifierGetStats(sp, &record.stats);
    }
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "scclSparsifierDestroy");
  });
  return run;
}

}  // namespace sccl_test
