// Online threshold scaling (MiCRO Sec. IV-C; ExDyna Alg. 5): the threshold follows the density
// error of the previous call instead of being estimated from the data, at no cost per element.
//   delta_0 = threshold if given, else 1/(2 sqrt(k)) (the hard-threshold value, as both papers).
//   After each call, exam = k' / k with k' the entries selected by all ranks.
// Two rules (config scaling_rule):
//   band (the papers'):   exam > beta -> delta *= 1 + gamma;  exam < 1/beta -> delta *= 1 - gamma;
//                         inside the band a step of gamma/4 toward the target (see below).
//   proportional (ours, the default): delta *= exam^(g / s), clamped to [1/4, 4] per call, with
//                         s = max(1, ln(1/density)) and g = 0.5. For an exponential (Laplace) tail
//                         k'(delta) = N exp(-delta/b), d ln k' / d ln delta = -delta/b =
//                         ln(density) at the target, so the step is half a Newton step: the density
//                         error halves every call. Heavier tails (smaller elasticity) converge more
//                         slowly but monotonically; lighter (Gaussian, elasticity ~2 ln(1/density))
//                         about one Newton step, still stable.
//   beta = scaling_band (1.1), gamma = scaling_step (0.005), the reference's constants.
// Why we differ from the reference code, on purpose:
//  - The band rule moves delta by at most 0.5 % per call. Starting from 1/(2 sqrt(k)), which can
//    be 5x off the threshold real gradients need once the error-feedback residual has built up,
//    it takes ~330 calls to get there (measured in tests/unit/test_sparse_density.cc), and it lags
//    any drift of the gradient scale faster than 0.125 % per call. The proportional rule reaches
//    the target in a handful of calls and tracks drift. "band" stays available.
//  - Inside the band the reference (and Alg. 5 line 5) always multiplies by 1 + gamma/4: its
//    `else` branch for a decrease is dead code. The threshold then drifts up until k' < k/beta and
//    jumps back by 1 - gamma, so the achieved density sits below the target on average. Our band
//    rule steps toward the target: exam > 1 -> 1 + gamma/4, exam < 1 -> 1 - gamma/4, else none.
//  - delta stays within the normal doubles [DBL_MIN, DBL_MAX]: a long run of empty selections
//    (all-zero gradients) or of selections above the band (NaN everywhere) would otherwise reach
//    0 or infinity, where multiplication can never bring it back. For the same reason a given
//    initial threshold must be finite and > 0.
//  - k = max(1, floor(density * count)) (the reference's int(density * n_g) can be 0).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/error.h"
#include "estimators/estimator_factories.h"
#include "kernels/shared/scaling_rule.h"

namespace sccl {
namespace {

class ScalingEstimator final : public ThresholdEstimator {
 public:
  ScalingEstimator(double initial, double band, double step, bool proportional, double density)
      : initial_(initial), delta_(initial) {
    rule_.band = band;
    rule_.step = step;
    rule_.proportional = proportional;
    setDensity(density, 0);
  }

  const char* name() const override { return "scaling"; }

  scclResult_t threshold(const ThresholdQuery&, double* threshold) override {
    SCCL_REQUIRE_ARG(threshold != nullptr, "estimator 'scaling': threshold output is null");
    *threshold = delta_;
    return scclSuccess;
  }

  // One definition with the device update of sync_free: kernels/shared/scaling_rule.h.
  void observe(uint64_t k_global, uint64_t k_target) override {
    delta_ = scaledThreshold(rule_, delta_, k_global, k_target);
  }

  double currentThreshold() const override { return delta_; }
  bool correctable() const override { return true; }

  // The corrected threshold replaces delta; observe() then scales it by k'/k, which is near 1
  // after a correction unless the bins' window did not reach far enough.
  void adoptThreshold(double used) override { delta_ = std::clamp(used, DBL_MIN, DBL_MAX); }
  void reset() override { delta_ = initial_; }
  const ScalingRule* scalingRule() const override { return &rule_; }
  // The exponent g / s with s = max(1, ln(1/density)); the threshold itself carries over.
  void setDensity(double density, size_t) override {
    rule_.exponent = kProportionalGain / std::max(1.0, std::log(1.0 / density));
  }
  // delta is the same on every rank: it moves only by the all-gathered counts.
  void saveState(StateWriter& shared, StateWriter&) const override { shared.f64(delta_); }
  scclResult_t loadState(StateReader& shared, StateReader&) override {
    double delta = 0;
    SCCL_CHECK(shared.finite("scaling threshold", &delta));
    SCCL_REQUIRE_ARG(delta >= DBL_MIN,
                     "sparsifier checkpoint: the scaling threshold %g is not a normal positive "
                     "number",
                     delta);
    delta_ = delta;
    return scclSuccess;
  }

 private:
  // Half a Newton step for an exponential tail (see the file header).
  static constexpr double kProportionalGain = 0.5;

  double initial_, delta_;
  ScalingRule rule_;
};

}  // namespace

scclResult_t createScalingEstimator(const EstimatorParams& params,
                                    std::unique_ptr<ThresholdEstimator>* out) {
  SCCL_REQUIRE_ARG(
      params.threshold < 0 || (params.threshold > 0 && std::isfinite(params.threshold)),
      "estimator 'scaling': threshold must be finite and > 0, or < 0 for the default "
      "1/(2 sqrt(k)) (got %g): 0 and infinity cannot be scaled",
      params.threshold);
  const double initial =
      params.threshold > 0 ? params.threshold : defaultThreshold(params.density, params.count);
  *out = std::make_unique<ScalingEstimator>(std::max(initial, DBL_MIN), params.scaling_band,
                                            params.scaling_step, params.scaling_proportional,
                                            params.density);
  return scclSuccess;
}

}  // namespace sccl
