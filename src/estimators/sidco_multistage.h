// The multi-stage threshold estimation shared by the three SIDCo variants (sidco_exp.cc,
// sidco_gp.cc, sidco_gamma_gp.cc), which differ only in the distribution fitted at the first
// stage and at the later ones. The procedure, its fallbacks and its cost are described in
// sidco_multistage.cc and docs/algorithms/sidco.md.
#pragma once

#include <memory>

#include "estimators/threshold_estimator.h"

namespace sccl {

enum class SidcoFit {
  Exponential,        // mean only
  GeneralisedPareto,  // mean and variance (method of moments)
  Gamma,              // mean and mean log (Minka), exact inverse incomplete gamma
};

struct SidcoVariant {
  const char* name;  // registry name, e.g. "sidco_exp"
  SidcoFit first;    // first stage, fitted to the non-zero |x| of the range
  SidcoFit later;    // later stages, fitted to the exceedances shifted by the previous threshold
};

// Checks the sidco_* knobs (messages name the JSON key) and builds the estimator.
scclResult_t createSidcoEstimator(const SidcoVariant& variant, const EstimatorParams& params,
                                  std::unique_ptr<ThresholdEstimator>* out);

// What the last threshold() call did, for tests and the benchmark.
struct SidcoTrace {
  int stages_planned = 0;  // M at this call
  int stages_run = 0;      // stages actually fitted (fewer when a stage left <= k exceedances)
  bool fallback = false;   // a degenerate fit was replaced by the documented fallback
  double correction = 1;   // the feedback's factor applied to the fitted threshold
  bool checked = false;    // the count check ran (sidco_feedback > 0)
  uint64_t checked_count = 0;  // then: elements at or above the threshold it chose (exact)
  bool check_widened = false;  // its first window held fewer than k: a second, wider pass ran
  // The check was decided in the kernels' memory (thresholdOrWord on device buffers): its
  // threshold came back with the caller's plan, and checked_count and check_widened stay unknown.
  bool on_device = false;
};
// The trace of the last threshold() call of a SIDCo estimator (nullptr if `estimator` is not one).
const SidcoTrace* sidcoLastTrace(const ThresholdEstimator& estimator);
// The current stage count M (0 if `estimator` is not a SIDCo estimator).
int sidcoStageCount(const ThresholdEstimator& estimator);

}  // namespace sccl
