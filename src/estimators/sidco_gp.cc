// sidco_gp: SIDCo-GP (Abdelmoniem et al., MLSys 2021, Sec. 2.3 Lemma 2 and Alg. 1), the
// multi-stage generalised Pareto threshold. |g| (and every stage's exceedances over the previous
// threshold, Lemma 2: peaks over a threshold of a GP are GP) is fitted by the method of moments:
//   r = mu^2 / s^2,  xi = (1 - r) / 2,  sigma = mu (r + 1) / 2,
//   eta_m = eta_{m-1} + sigma (delta_m^-xi - 1) / xi        (eta_0 = 0),
// with the quantile computed as sigma expm1(xi ln(1/delta_m)) / xi, and the exponential limit
// sigma ln(1/delta_m) when |xi ln(1/delta_m)| < 1e-8: mu^2 ~= s^2 (xi -> 0, the reference's
// unstable case) never divides by ~0. A constant sample (s^2 <= 1e-12 mu^2) is degenerate: the
// threshold falls back to the sample's maximum (sidco_multistage.cc).
// Passes over the data: one per stage (mean and variance come from the same fused pass), then the
// selection. Differences from the reference code: see sidco_multistage.cc.
#include "estimators/estimator_factories.h"
#include "estimators/sidco_multistage.h"

namespace sccl {

scclResult_t createSidcoGpEstimator(const EstimatorParams& params,
                                    std::unique_ptr<ThresholdEstimator>* out) {
  static const SidcoVariant variant{"sidco_gp", SidcoFit::GeneralisedPareto,
                                    SidcoFit::GeneralisedPareto};
  return createSidcoEstimator(variant, params, out);
}

}  // namespace sccl
