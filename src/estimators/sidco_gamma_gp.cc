// sidco_gamma_gp: SIDCo-P (Abdelmoniem et al., MLSys 2021, Sec. 2.3 and Alg. 1), gamma first
// stage, generalised Pareto later stages. Stage 1 fits a gamma distribution to the non-zero |g|
// with Minka's closed-form shape estimate:
//   s = ln(mu) - mean(ln |g|),  a = (3 - s + sqrt((s - 3)^2 + 24 s)) / (12 s),  b = mu / a,
//   eta_1 = b * Q^-1(a, delta_1)
// with Q^-1 the exact inverse of the regularised upper incomplete gamma function
// (boost::math::gamma_q_inv from Debian's libboost-math-dev; the paper's Alg. 1 uses the
// approximation -b (ln delta + ln Gamma(a)), the reference code scipy's gammaincinv, which we
// match). The exceedances of later stages are fitted by GP (Lemma 2), as sidco_gp.cc.
// Passes over the data: one per stage; the first also sums ln|g| (one logarithm per non-zero
// element, the most expensive pass of the SIDCo family); then the selection. s = 0 (constant
// magnitudes) is degenerate and falls back to the maximum (sidco_multistage.cc).
// Differences from the reference code: exact zeros are left out of the mean log instead of
// entering as ln(2.2e-16); the rest as sidco_multistage.cc.
#include "estimators/estimator_factories.h"
#include "estimators/sidco_multistage.h"

namespace sccl {

scclResult_t createSidcoGammaGpEstimator(const EstimatorParams& params,
                                         std::unique_ptr<ThresholdEstimator>* out) {
  static const SidcoVariant variant{"sidco_gamma_gp", SidcoFit::Gamma, SidcoFit::GeneralisedPareto};
  return createSidcoEstimator(variant, params, out);
}

}  // namespace sccl
