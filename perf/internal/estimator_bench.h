// Uses library internals (links sparsecoll_objects): the threshold estimators and the CPU kernels.
// estimator_perf's two modes share the estimators as the benchmark configures them; the cost
// mode lives in estimator_cost.cc, the quality mode and the command line in estimator_perf.cc.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/options.h"
#include "common/report.h"
#include "estimators/threshold_estimator.h"

namespace sccl_perf {

// An estimator as the benchmark runs it: registry name plus knob overrides.
struct EstimatorSetup {
  std::string label;
  std::string name;
  int stages = 0;        // sidco_stages
  double feedback = -1;  // sidco_feedback; < 0: -G (default: the library's default)
};

// sidco_feedback of the rows whose setup leaves it unset (-G; default: the library's).
extern double g_feedback_gain;

// The estimator of a row for this density and vector length; exits on a registry error.
std::unique_ptr<sccl::ThresholdEstimator> makeEstimator(const EstimatorSetup& setup, double density,
                                                        size_t count);

// -m cost: time of estimation plus selection against exact and sort-based top-k.
int runCost(const PerfOptions& options, const KeyValues& machine);

}  // namespace sccl_perf
