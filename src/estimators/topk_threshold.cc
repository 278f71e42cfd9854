// The exact top-k estimator (Top-k on the whole vector, and CLT-k's leader): the threshold is the
// k-th largest |acc| of the rank's range, found by the backend's kthLargestAbs kernel (a
// selection, not a sort: O(range) per call). exactCount() tells the caller to trim the entries
// tied at the threshold so that exactly k are selected. No state survives a call except the last
// value, for statistics; observe() has nothing to learn.
//   empty range or k = 0     -> +infinity (nothing qualifies except NaN/inf, then trimmed to 0)
//   k >= range size          -> 0 (everything qualifies)
//   k-th largest is NaN      -> +infinity: NaN counts as the largest, so there are at least k
//                               NaNs, and !(|x| < inf) still takes every one of them
// The reference TopKReducer calls torch.topk on the whole flattened vector; the value is the same.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "estimators/estimator_factories.h"

namespace sccl {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

class TopkEstimator final : public ThresholdEstimator {
 public:
  const char* name() const override { return "topk"; }
  bool exactCount() const override { return true; }
  bool mayTrim() const override { return true; }
  bool thresholdIsKthLargest() const override { return true; }

  scclResult_t threshold(const ThresholdQuery& query, double* threshold) override {
    SCCL_REQUIRE_ARG(threshold != nullptr, "estimator 'topk': threshold output is null");
    const IndexRange& range = query.range;
    SCCL_REQUIRE_ARG(range.begin <= range.end, "estimator 'topk': range [%zu, %zu) is reversed",
                     range.begin, range.end);
    double value = 0;
    if (range.empty() || query.k_target_local == 0) {
      value = kInfinity;
    } else if (query.k_target_local >= range.size()) {
      value = 0;
    } else {
      SCCL_REQUIRE_ARG(query.kernels != nullptr && query.acc != nullptr,
                       "estimator 'topk': kernels or accumulator is null");
      SCCL_CHECK(query.kernels->kthLargestAbs(query.acc, query.acc_dtype, range.begin, range.end,
                                              query.k_target_local, &value, query.stream));
      if (std::isnan(value)) value = kInfinity;
    }
    last_ = value;
    *threshold = value;
    return scclSuccess;
  }

  void observe(uint64_t, uint64_t) override {}
  // The device-resident CLT-k call computes the k-th value on the device and reports it here;
  // the host top-k call when it found it among the pass's candidates.
  void adoptThreshold(double used) override { last_ = used; }
  double currentThreshold() const override { return last_; }
  void reset() override { last_ = 0; }
  // This rank's k-th magnitude of the last call (infinity when its range was empty).
  void saveState(StateWriter&, StateWriter& own) const override { own.f64(last_); }
  scclResult_t loadState(StateReader&, StateReader& own) override {
    return loadLastThreshold("topk", own, &last_);
  }

 private:
  double last_ = 0;  // 0 until the first call
};

}  // namespace

scclResult_t createTopkEstimator(const EstimatorParams&, std::unique_ptr<ThresholdEstimator>* out) {
  *out = std::make_unique<TopkEstimator>();
  return scclSuccess;
}

}  // namespace sccl
