// The hard-threshold estimator (Sahu et al., "Rethinking gradient sparsification as total error
// minimization", the baseline of MiCRO and ExDyna): one threshold fixed before training, every
// entry with |x| >= threshold is selected. Default 1/(2 sqrt(k)), k = max(1, floor(density *
// count)), as the reference ThreshReducer (which uses int(density * n_g) and so can reach k = 0).
// The density it produces is whatever the gradients make of it: the papers measured up to 106x
// the target. It never changes, so observe() ignores k'.
#include <cmath>

#include "core/error.h"
#include "estimators/estimator_factories.h"

namespace sccl {
namespace {

class FixedEstimator final : public ThresholdEstimator {
 public:
  FixedEstimator(double threshold, bool derived) : threshold_(threshold), derived_(derived) {}
  const char* name() const override { return "fixed"; }
  bool thresholdBeforeData() const override { return true; }
  scclResult_t threshold(const ThresholdQuery&, double* threshold) override {
    SCCL_REQUIRE_ARG(threshold != nullptr, "estimator 'fixed': threshold output is null");
    *threshold = threshold_;
    return scclSuccess;
  }
  void observe(uint64_t, uint64_t) override {}
  double currentThreshold() const override { return threshold_; }
  void reset() override {}
  // Only the default threshold 1/(2 sqrt(k)) depends on the density; a given one stays.
  void setDensity(double density, size_t count) override {
    if (derived_) threshold_ = defaultThreshold(density, count);
  }

 private:
  double threshold_;
  bool derived_;
};

}  // namespace

scclResult_t createFixedEstimator(const EstimatorParams& params,
                                  std::unique_ptr<ThresholdEstimator>* out) {
  const double threshold =
      params.threshold >= 0 ? params.threshold : defaultThreshold(params.density, params.count);
  *out = std::make_unique<FixedEstimator>(threshold, params.threshold < 0);
  return scclSuccess;
}

}  // namespace sccl
