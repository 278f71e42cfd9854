// The threshold-scaling rule of the scaling estimator (scaling_threshold.cc explains both rules
// and why they differ from the reference code), shared with the CUDA kernels: the sync_free
// reduction updates its threshold on the device from the all-gathered counts with this function,
// so no count has to travel to the host. Every rank runs it on the same counts and gets the same
// threshold. (On the CPU pow is glibc's, on the GPU CUDA's: the two may differ in the last bit,
// so a CPU and a GPU run agree within rounding, and each is bitwise identical across its ranks.)
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/shared/host_device.h"

namespace sccl {

struct ScalingRule {
  double band = 1.1;         // beta
  double step = 0.005;       // gamma
  bool proportional = true;  // the proportional rule (else the papers' band rule)
  double exponent = 0.5;     // g / s of the proportional rule
};

// Half a Newton step for an exponential tail; at most this factor per call either way.
constexpr double kScalingMaxProportionalFactor = 4.0;

// The factor the threshold is multiplied by after a call that selected k_global of k_target.
SCCL_HOST_DEVICE inline double scalingFactor(const ScalingRule& rule, uint64_t k_global,
                                             uint64_t k_target) {
  // A zero target cannot come from targetSelectionCount(); read it as "select nothing".
  if (k_target == 0) return k_global > 0 ? 1 + rule.step : 1;
  const double exam = static_cast<double>(k_global) / static_cast<double>(k_target);
  if (rule.proportional) {
    if (k_global == k_target) return 1;
    // Nothing selected: count it as half an entry so the threshold still comes down.
    const double ratio = k_global == 0 ? 0.5 / static_cast<double>(k_target) : exam;
    const double factor = ::pow(ratio, rule.exponent);
    if (factor < 1 / kScalingMaxProportionalFactor) return 1 / kScalingMaxProportionalFactor;
    return factor > kScalingMaxProportionalFactor ? kScalingMaxProportionalFactor : factor;
  }
  if (exam > rule.band) return 1 + rule.step;
  if (exam < 1 / rule.band) return 1 - rule.step;
  // Inside the band: compared as integers, so exactly on target means no change.
  if (k_global > k_target) return 1 + rule.step / 4;
  if (k_global < k_target) return 1 - rule.step / 4;
  return 1;
}

// The next threshold: delta scaled, kept within the normal doubles [DBL_MIN, DBL_MAX].
SCCL_HOST_DEVICE inline double scaledThreshold(const ScalingRule& rule, double delta,
                                               uint64_t k_global, uint64_t k_target) {
  const double next = delta * scalingFactor(rule, k_global, k_target);
  if (!(next >= DBL_MIN)) return DBL_MIN;
  return next > DBL_MAX ? DBL_MAX : next;
}

}  // namespace sccl
