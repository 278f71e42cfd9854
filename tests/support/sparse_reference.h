// A straightforward model of the gather reduction (the data path of MiCRO, ExDyna, Top-k, CLT-k
// and the hard threshold), written independently of src/algorithms/ so tests can compare the
// library's outputs and residuals bitwise. It takes from the library only what is specified
// elsewhere and tested on its own: the search space's ranges (src/partition/) and the
// threshold the estimator chose (identical on every rank for fixed and scaling estimators).
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

struct ReferenceCall {
  std::vector<float> output;     // expected recvbuf (sum; divide for avg by caller)
  std::vector<uint64_t> counts;  // k_i
  std::vector<int64_t> global;   // selected indices (sorted)
};

class GatherReference {
 public:
  GatherReference(std::unique_ptr<sccl::SearchSpace> search, int nranks, size_t count, bool topk,
                  uint64_t k)
      : search_(std::move(search)),
        nranks_(nranks),
        count_(count),
        topk_(topk),
        k_(k),
        residual_(size_t(nranks), std::vector<float>(count, 0.0f)) {}

  // One call at `iteration` with every rank's gradient; threshold is the estimator's (unused for
  // top-k, which is computed exactly here).
  ReferenceCall step(const std::vector<std::vector<float>>& grads, double threshold,
                     uint64_t iteration) {
    std::vector<std::vector<float>> acc(static_cast<size_t>(nranks_), std::vector<float>(count_));
    for (int r = 0; r < nranks_; ++r)
      for (size_t i = 0; i < count_; ++i) acc[r][i] = residual_[r][i] + grads[r][i];
    ReferenceCall call;
    call.counts.assign(size_t(nranks_), 0);
    std::vector<char> chosen(count_, 0);
    int sole = search_->soleSelector(iteration);
    for (int r = 0; r < nranks_; ++r) {
      if (sole >= 0 && sole != r) continue;
      sccl::IndexRange range = search_->rangeFor(r, iteration);
      std::vector<int64_t> mine = topk_ ? exactTopK(acc[r], range, localTarget(range))
                                        : aboveThreshold(acc[r], range, threshold);
      call.counts[r] = mine.size();
      for (int64_t i : mine) chosen[size_t(i)] = 1;
    }
    call.output.assign(count_, 0.0f);
    for (size_t i = 0; i < count_; ++i) {
      if (!chosen[i]) continue;
      call.global.push_back(int64_t(i));
      float sum = acc[0][i];
      for (int r = 1; r < nranks_; ++r) sum += acc[r][i];
      call.output[i] = sum;
      for (int r = 0; r < nranks_; ++r) acc[r][i] = 0.0f;
    }
    residual_ = std::move(acc);
    search_->observeCounts(call.counts.data(), iteration);
    return call;
  }

  const std::vector<float>& residual(int rank) const { return residual_[size_t(rank)]; }

 private:
  uint64_t localTarget(sccl::IndexRange range) const {
    if (!search_->exclusive()) return k_;
    if (range.size() == 0) return 0;
    return std::max<uint64_t>(
        1, uint64_t(std::ceil(double(k_) * double(range.size()) / double(count_))));
  }

  static std::vector<int64_t> aboveThreshold(const std::vector<float>& acc, sccl::IndexRange range,
                                             double threshold) {
    std::vector<int64_t> out;
    for (size_t i = range.begin; i < range.end; ++i)
      if (!(double(std::fabs(acc[i])) < threshold)) out.push_back(int64_t(i));
    return out;
  }

  // The k largest |x| in the range; among equal magnitudes the lower index wins.
  static std::vector<int64_t> exactTopK(const std::vector<float>& acc, sccl::IndexRange range,
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
  std::vector<std::vector<float>> residual_;
};

}  // namespace sccl_test
