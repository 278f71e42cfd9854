// The estimators' knobs, each declared once (core/knob_table.h says what a row becomes):
//   X(type, key, scclSparseConfig_t field, lowest, highest, bounds, help)
// Ranges are the knobs' own; a rule that ties a knob to one estimator (scaling cannot start from
// a zero or infinite threshold) stays in that estimator's factory.
#pragma once

#include <cstdint>
#include <vector>

#include "core/knob_table.h"

#define SCCL_ESTIMATOR_KNOBS(X)                                                                  \
  X(double, threshold, threshold, -DBL_MAX, INFINITY, Closed,                                    \
    "fixed (hard_threshold) or first (scaling) threshold; < 0: 1/(2 sqrt(k)) as the reference")  \
  X(double, scaling_band, scalingBand, 1, DBL_MAX, OpenBelow,                                    \
    "beta: the scaling threshold holds while k'/k stays within [1/beta, beta]")                  \
  X(double, scaling_step, scalingStep, 0, 1, Open,                                               \
    "gamma: the scaling threshold's step outside the band (scaling_rule \"band\")")              \
  X(double, sidco_first_ratio, sidcoFirstRatio, 0, 1, Open, "SIDCo's first-stage ratio delta_1") \
  X(int, sidco_stages, sidcoStages, 0, INT_MAX, Closed,                                          \
    "SIDCo's stages M; 0: adaptive, starting at 1")                                              \
  X(int, sidco_max_stages, sidcoMaxStages, 0, INT_MAX, Closed,                                   \
    "the adaptive M's upper bound; 0: ceil(log2(1/density))")                                    \
  X(int, sidco_adapt_interval, sidcoAdaptInterval, 1, INT_MAX, Closed,                           \
    "calls between SIDCo's stage searches (Q)")                                                  \
  X(double, sidco_adapt_tolerance, sidcoAdaptTolerance, 0, 1, Open,                              \
    "the stage search moves M when the mean k'/k leaves [1 - tol, 1 + tol]")                     \
  X(double, sidco_feedback, sidcoFeedback, 0, 1, Closed,                                         \
    "gain of SIDCo's k'/k correction; 0: the paper's estimator")                                 \
  X(double, dgc_sample_ratio, dgcSampleRatio, 0, 1, OpenBelow,                                   \
    "the fraction of the range DGC samples for its threshold")                                   \
  X(uint64_t, dgc_seed, dgcSeed, 0, INT_MAX, Closed, "seed of DGC's deterministic sampling")

namespace sccl {

SCCL_DECLARE_KNOB_AXIS(EstimatorKnobs, SCCL_ESTIMATOR_KNOBS)

}  // namespace sccl
