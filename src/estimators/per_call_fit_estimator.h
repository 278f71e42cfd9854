// The shell of an estimator that fits each call's data and keeps nothing between calls but its
// last threshold, for the statistics and checkpoints (gaussiank, redsync): the query's checks and
// trivial cases (fittedThreshold), the last value, its state. A subclass gives its name and
// estimate(query, k, &threshold), which reads the range through the query's kernels.
#pragma once

#include <cstdint>

#include "core/error.h"
#include "estimators/threshold_estimator.h"

namespace sccl {

class PerCallFitEstimator : public ThresholdEstimator {
 public:
  scclResult_t threshold(const ThresholdQuery& query, double* threshold) final {
    SCCL_CHECK(fittedThreshold(name(), query, threshold, [&](uint64_t k, double* value) {
      return estimate(query, k, value);
    }));
    last_ = *threshold;
    return scclSuccess;
  }

  void observe(uint64_t, uint64_t) final {}
  double currentThreshold() const final { return last_; }
  void reset() final { last_ = 0; }
  // This rank's fitted threshold of the last call.
  void saveState(StateWriter&, StateWriter& own) const final { own.f64(last_); }
  scclResult_t loadState(StateReader&, StateReader& own) final {
    return loadLastThreshold(name(), own, &last_);
  }

 protected:
  // The threshold for k = query.k_target_local, 0 < k < the range's size.
  virtual scclResult_t estimate(const ThresholdQuery& query, uint64_t k, double* out) const = 0;

 private:
  double last_ = 0;
};

}  // namespace sccl
