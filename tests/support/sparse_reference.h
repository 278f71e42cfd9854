// A straightforward model of the gather reduction (the data path of MiCRO, ExDyna, Top-k, CLT-k
// and the hard threshold), written independently of src/algorithms/ so tests can compare the
// library's outputs and residuals bitwise. It takes from the library only what is specified
// elsewhere and tested on its own: the search space's ranges (src/partition/) and the
// threshold the estimator chose (identical on every rank for fixed and scaling estimators; per
// rank for the data-driven ones, sidco_*, dgc, redsync, gaussiank).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "partition/search_space.h"

namespace sccl_test {

// The search space a preset uses, built as the library builds it (null if the name is unknown).
inline std::unique_ptr<sccl::SearchSpace> presetSearchSpace(const std::string& algorithm,
                                                            size_t count, int nranks) {
  const char* name = algorithm == "cltk"     ? "leader"
                     : algorithm == "micro"  ? "micro"
                     : algorithm == "exdyna" ? "exdyna"
                                             : "whole";
  sccl::SearchSpaceParams params;
  params.count = count;
  params.nranks = nranks;
  std::unique_ptr<sccl::SearchSpace> search;
  if (sccl::makeSearchSpace(name, params, &search) != scclSuccess) return nullptr;
  return search;
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
    return step(grads, std::vector<double>(static_cast<size_t>(nranks_), threshold), iteration);
  }

  // Each rank with its own threshold (data-driven estimators compute it from the rank's data).
  BasicReferenceCall<Acc> step(const std::vector<std::vector<Acc>>& grads,
                               const std::vector<double>& thresholds, uint64_t iteration) {
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
          if (!(double(std::fabs(acc[r][i])) < thresholds[size_t(r)])) mine.push_back(int64_t(i));
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

using ReferenceCall = BasicReferenceCall<float>;
using GatherReference = BasicGatherReference<float>;

}  // namespace sccl_test
