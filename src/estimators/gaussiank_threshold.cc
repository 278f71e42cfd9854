// gaussiank: the Gaussian threshold of GaussianK-SGD (Shi et al., "Understanding Top-k
// Sparsification in Distributed Deep Learning", 2019, Alg. 2; the GaussianKSGD baseline of the
// SIDCo paper, reference sands-lab/SIDCo compression.py `gaussianksgdec`).
// One call, range R of n elements, target k = k_target_local, delta = k / n:
//  1. One pass (absMoments): mean mu and standard deviation sd of |x| over R.
//  2. t = mu + z sd with z = Phi^-1(1 - delta/2) (boost::math::erfc_inv; the two-sided normal
//     quantile applied to |x|, as the reference).
//  3. Up to 3 corrections, each counting nnz = #{|x| >= t} (one pass, absMoments):
//     nnz < 2k/3 -> t *= 0.5; nnz > 4k/3 -> t *= 1.5; otherwise stop. The threshold after the
//     last correction is used without a further count (as the reference).
// Passes over the data: 1 + up to 3, then the selection.
// Differences from the reference: none in the rule (Shi et al.'s original fits the signed g and
// loops up to 100 times with x0.1 / x2 steps; the SIDCo paper's variant is the one compared).
// An all-zero range gives +inf (the formula would give 0 and select every zero).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "estimators/distribution_fits.h"
#include "estimators/estimator_factories.h"
#include "estimators/per_call_fit_estimator.h"

namespace sccl {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kCorrections = 3;

class GaussiankEstimator final : public PerCallFitEstimator {
 public:
  const char* name() const override { return "gaussiank"; }

 private:
  scclResult_t estimate(const ThresholdQuery& q, uint64_t k, double* out) const override {
    const KernelBackend& kernels = *q.kernels;
    AbsMoments all;
    SCCL_CHECK(kernels.absMoments(q.acc, q.acc_dtype, q.range.begin, q.range.end, 0.0, false, &all,
                                  q.stream));
    if (all.count == 0 || !(all.max_abs > 0)) {
      *out = kInfinity;
      return scclSuccess;
    }
    const double n = static_cast<double>(all.count);
    const double mean = all.sum_abs / n;
    const double sd = std::sqrt(std::max(0.0, all.sum_sq / n - mean * mean));
    const double delta = static_cast<double>(k) / static_cast<double>(q.range.size());
    double t = mean + normalUpperQuantile(0.5 * delta) * sd;
    if (!std::isfinite(t)) t = all.max_abs;  // cannot happen for 0 < delta < 1; never NaN
    for (int i = 0; i < kCorrections; ++i) {
      AbsMoments above;
      SCCL_CHECK(kernels.absMoments(q.acc, q.acc_dtype, q.range.begin, q.range.end, t, false,
                                    &above, q.stream));
      if (3 * above.count < 2 * k) {
        t *= 0.5;
      } else if (3 * above.count > 4 * k) {
        t *= 1.5;
      } else {
        break;
      }
    }
    *out = t;
    return scclSuccess;
  }
};

}  // namespace

scclResult_t createGaussiankEstimator(const EstimatorParams&,
                                      std::unique_ptr<ThresholdEstimator>* out) {
  *out = std::make_unique<GaussiankEstimator>();
  return scclSuccess;
}

}  // namespace sccl
