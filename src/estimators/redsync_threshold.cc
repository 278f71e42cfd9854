// redsync: RedSync's threshold binary search (Fang et al., "RedSync: Reducing synchronization
// bandwidth for distributed deep learning training system", JPDC 2019, Sec. 4.1 "trimmed top-k";
// the RedSync baseline of the SIDCo paper, reference sands-lab/SIDCo compression.py `redsync`).
// One call, range R of n elements, target k = k_target_local:
//  1. One pass (absMoments): mean and max of |x| over R.
//  2. Bisection of r in [0, 1] with threshold t(r) = mean + r (max - mean): r = midpoint, count
//     nnz = #{|x| >= t(r)} (one pass each, absMoments); k <= nnz <= 2k accepts t(r);
//     nnz < k lowers the threshold (r_hi = r); nnz > 2k raises it (r_lo = r). The search stops
//     once r_hi - r_lo < 0.2 (the reference's eps), i.e. after at most 3 counts; the last t(r)
//     is used whether or not it was accepted.
// Passes over the data: 1 + up to 3, then the selection.
// Deliberate difference from the reference: its bisection lowers the threshold only when
// nnz < k/2 and raises it otherwise, so a count in [k/2, k) - already too few - raises the
// threshold further (the wrong direction). Here every nnz < k lowers it, as the paper describes.
// An all-zero range (max = 0) gives +inf (nothing to send) instead of selecting every zero; so
// does a range holding +-inf (mean + r (max - mean) would be NaN).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "estimators/estimator_factories.h"
#include "estimators/per_call_fit_estimator.h"

namespace sccl {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kBisectionEpsilon = 0.2;  // the reference's eps: at most 3 counts

class RedsyncEstimator final : public PerCallFitEstimator {
 public:
  const char* name() const override { return "redsync"; }

 private:
  static scclResult_t countAtLeast(const ThresholdQuery& q, double t, uint64_t* count) {
    AbsMoments m;
    SCCL_CHECK(q.kernels->absMoments(q.acc, q.acc_dtype, q.range.begin, q.range.end, t, false, &m,
                                     q.stream));
    *count = m.count;
    return scclSuccess;
  }

  scclResult_t estimate(const ThresholdQuery& q, uint64_t k, double* out) const override {
    AbsMoments all;
    SCCL_CHECK(q.kernels->absMoments(q.acc, q.acc_dtype, q.range.begin, q.range.end, 0.0, false,
                                     &all, q.stream));
    if (all.count == 0 || !(all.max_abs > 0)) {
      *out = kInfinity;
      return scclSuccess;
    }
    const double mean = all.sum_abs / static_cast<double>(all.count);
    const double max = all.max_abs;
    if (!std::isfinite(mean) || !std::isfinite(max)) {
      *out = kInfinity;  // +-inf in the range (the non-finite policy discards or fails the step)
      return scclSuccess;
    }
    double lo = 0, hi = 1, t = max;
    while (hi - lo >= kBisectionEpsilon) {
      const double r = 0.5 * (lo + hi);
      t = mean + r * (max - mean);
      uint64_t nnz = 0;
      SCCL_CHECK(countAtLeast(q, t, &nnz));
      if (nnz >= k && nnz <= 2 * k) break;
      if (nnz < k) {
        hi = r;
      } else {
        lo = r;
      }
    }
    *out = t;
    return scclSuccess;
  }
};

}  // namespace

scclResult_t createRedsyncEstimator(const EstimatorParams&,
                                    std::unique_ptr<ThresholdEstimator>* out) {
  *out = std::make_unique<RedsyncEstimator>();
  return scclSuccess;
}

}  // namespace sccl
