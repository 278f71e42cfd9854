// scclSparseAllreduce in any gradient dtype (float16, bfloat16, float32, float64) on in-process
// ranks, recording per call and rank the output bytes, the residual (widened to double), the rank
// counts and the statistics; and BasicGatherReference<Acc>, the model of
// support/sparse_reference.h with the accumulator type as a parameter (double for float64
// gradients, whose residual is float64).
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
#include "core/sparsifier.h"
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

template <typename Acc>
struct BasicReferenceCall {
  std::vector<Acc> output;       // sum over ranks in rank order, in Acc (0 where not selected)
  std::vector<uint64_t> counts;  // k_i
  std::vector<int64_t> global;   // selected indices (sorted)
};

// The gather reduction on Acc accumulators: acc = residual + gradient; each rank selects in its
// range (|acc| >= threshold, or its exact top-k with ties to the lower index); the output is the
// rank-order sum of acc at the selected indices, which every rank's residual then loses.
template <typename Acc>
class BasicGatherReference {
 public:
  BasicGatherReference(std::unique_ptr<sccl::SearchSpace> search, int nranks, size_t count,
                       bool topk, uint64_t k)
      : search_(std::move(search)),
        nranks_(nranks),
        count_(count),
        topk_(topk),
        k_(k),
        residual_(static_cast<size_t>(nranks), std::vector<Acc>(count, Acc(0))) {}

  BasicReferenceCall<Acc> step(const std::vector<std::vector<Acc>>& grads, double threshold,
                               uint64_t iteration) {
    std::vector<std::vector<Acc>> acc(static_cast<size_t>(nranks_), std::vector<Acc>(count_));
    for (int r = 0; r < nranks_; ++r)
      for (size_t i = 0; i < count_; ++i) acc[r][i] = residual_[r][i] + grads[r][i];
    BasicReferenceCall<Acc> call;
    call.counts.assign(static_cast<size_t>(nranks_), 0);
    std::vector<char> chosen(count_, 0);
    const int sole = search_->soleSelector(iteration);
    for (int r = 0; r < nranks_; ++r) {
      if (sole >= 0 && sole != r) continue;
      const sccl::IndexRange range = search_->rangeFor(r, iteration);
      std::vector<int64_t> mine;
      if (topk_) {
        mine = exactTopK(acc[r], range, localTarget(range));
      } else {
        for (size_t i = range.begin; i < range.end; ++i)
          if (!(double(std::fabs(acc[r][i])) < threshold)) mine.push_back(int64_t(i));
      }
      call.counts[r] = mine.size();
      for (int64_t i : mine) chosen[size_t(i)] = 1;
    }
    call.output.assign(count_, Acc(0));
    for (size_t i = 0; i < count_; ++i) {
      if (!chosen[i]) continue;
      call.global.push_back(int64_t(i));
      Acc sum = acc[0][i];
      for (int r = 1; r < nranks_; ++r) sum += acc[r][i];
      call.output[i] = sum;
      for (int r = 0; r < nranks_; ++r) acc[r][i] = Acc(0);
    }
    residual_ = std::move(acc);
    search_->observeCounts(call.counts.data(), iteration);
    return call;
  }

  const std::vector<Acc>& residual(int rank) const { return residual_[size_t(rank)]; }

 private:
  uint64_t localTarget(sccl::IndexRange range) const {
    if (!search_->exclusive()) return k_;
    if (range.size() == 0) return 0;
    return std::max<uint64_t>(
        1, uint64_t(std::ceil(double(k_) * double(range.size()) / double(count_))));
  }

  static std::vector<int64_t> exactTopK(const std::vector<Acc>& acc, sccl::IndexRange range,
                                        uint64_t k) {
    std::vector<int64_t> order(range.size());
    std::iota(order.begin(), order.end(), int64_t(range.begin));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(acc[size_t(a)]) > std::fabs(acc[size_t(b)]);
    });
    order.resize(std::min<size_t>(order.size(), k));
    std::sort(order.begin(), order.end());
    return order;
  }

  std::unique_ptr<sccl::SearchSpace> search_;
  int nranks_;
  size_t count_;
  bool topk_;
  uint64_t k_;
  std::vector<std::vector<Acc>> residual_;
};

}  // namespace sccl_test
