// sidco_exp: SIDCo-E (Abdelmoniem et al., MLSys 2021, Sec. 2.3 Corollary 2.1 and Alg. 1), the
// multi-stage exponential threshold. |g| is modelled as exponential (g double-exponential,
// i.e. Laplace): P(|g| >= eta) = exp(-eta / mu), so for a target ratio delta
//   stage 1:   eta_1 = mu * ln(1 / delta_1),       mu = mean of the non-zero |g|
//   stage m:   eta_m = eta_{m-1} + mu_m * ln(1 / delta_m),  mu_m = mean of (|g| - eta_{m-1}) over
//              the exceedances |g| >= eta_{m-1} (the exceedances of an exponential are
//              exponential, Corollary 2.1).
// Passes over the data: one per stage (mean only; no logarithm), then the selection. The stage
// schedule, adaptation, feedback, fallbacks and the differences from the reference code are those
// of sidco_multistage.cc.
#include "estimators/estimator_factories.h"
#include "estimators/sidco_multistage.h"

namespace sccl {

scclResult_t createSidcoExpEstimator(const EstimatorParams& params,
                                     std::unique_ptr<ThresholdEstimator>* out) {
  static const SidcoVariant variant{"sidco_exp", SidcoFit::Exponential, SidcoFit::Exponential};
  return createSidcoEstimator(variant, params, out);
}

}  // namespace sccl
