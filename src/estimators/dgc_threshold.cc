// dgc: the sampled threshold of Deep Gradient Compression (Lin et al., ICLR 2018, Sec. 3 and
// the "Implementation" paragraph; the DGC baseline of the SIDCo paper, reference
// sands-lab/SIDCo compression.py `dgcsampling`).
// One call, range R of n elements, target k = k_target_local, delta = k / n:
//  1. Sample s = ceil(sample_ratio * n) positions of R (dgc_sample_ratio, 1 %), drawn with
//     replacement by a counter-based hash (splitmix64 of dgc_seed, the iteration and the sample
//     number): deterministic, the same on every run and every rank for the same iteration.
//  2. Gather them (kernel gather) and take the k_s-th largest |x| of the sample,
//     k_s = ceil(s * delta) (kernel kthLargestAbs on the s values): the threshold t.
//  3. Count |x| >= t over R (one pass, absMoments). If more than 4k/3 pass, trim exactly to k:
//     t becomes the k-th largest |x| of the range (kthLargestAbs over the selected entries when
//     they are at most n/4, else over R) and exactCount() asks the caller to cut the ties, so
//     exactly k are selected. Fewer than 4k/3 (also fewer than k) are kept as they are.
//  A zero sample threshold is raised to the smallest denormal, so exact zeros are never selected
//  (an all-zero range gives +inf: nothing to send).
// On device buffers (q.device) the kernels run on the GPU and the sampled or selected values come
// to the host through the staging; their k-th largest is always taken by the CPU kernels, so both
// paths give the same threshold.
// Passes over the data: the count pass, plus a selection pass into scratch when trimming, then
// the caller's selection. The sample itself costs O(s) random reads.
// Differences from the reference: the sample is drawn with replacement by hashing (the
// reference calls randperm(n), an O(n) permutation, which made DGC slower than top-k on CPU in
// the paper); the selection is |x| >= t (reference: > t); empty ranges and k >= n are handled
// (+inf / 0), a NaN sample value gives +inf (the step is discarded by the NaN policy anyway).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/device_staging.h"
#include "estimators/estimator_factories.h"

namespace sccl {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class DgcEstimator final : public ThresholdEstimator {
 public:
  DgcEstimator(double sample_ratio, uint64_t seed) : sample_ratio_(sample_ratio), seed_(seed) {}

  const char* name() const override { return "dgc"; }
  bool exactCount() const override { return trimmed_; }
  bool mayTrim() const override { return true; }

  scclResult_t threshold(const ThresholdQuery& query, double* threshold) override {
    trimmed_ = false;
    SCCL_CHECK(fittedThreshold("dgc", query, threshold, [&](uint64_t k, double* value) {
      return estimate(query, k, value);
    }));
    last_ = *threshold;
    return scclSuccess;
  }

  void observe(uint64_t, uint64_t) override {}
  double currentThreshold() const override { return last_; }
  void reset() override {
    last_ = 0;
    trimmed_ = false;
  }
  // This rank's threshold of the last call (each call decides its trim anew).
  void saveState(StateWriter&, StateWriter& own) const override { own.f64(last_); }
  scclResult_t loadState(StateReader&, StateReader& own) override {
    return loadLastThreshold("dgc", own, &last_);
  }

 private:
  scclResult_t estimate(const ThresholdQuery& q, uint64_t k, double* out) {
    const KernelBackend& kernels = *q.kernels;
    const size_t n = q.range.size();
    const size_t element = q.acc_dtype == scclFloat64 ? 8 : 4;
    const size_t samples = std::max<size_t>(
        1, std::min(n, static_cast<size_t>(std::ceil(sample_ratio_ * static_cast<double>(n)))));
    const uint64_t sample_k = std::clamp<uint64_t>(
        static_cast<uint64_t>(std::ceil(static_cast<double>(samples) * static_cast<double>(k) /
                                        static_cast<double>(n))),
        1, samples);
    sample_idx_.resize(samples);
    const uint64_t stream = splitmix64(seed_ ^ splitmix64(q.iteration));
    for (size_t j = 0; j < samples; ++j) {
      sample_idx_[j] = static_cast<int64_t>(q.range.begin + splitmix64(stream + j) % n);
    }
    sample_val_.resize(samples * element);
    // The sampled values come to the host (on device buffers through the staging), where the
    // CPU kernels find their k-th largest: the same bits on either path.
    void* idx = nullptr;
    void* values = nullptr;
    SCCL_CHECK(stagedArray(q.device, DeviceStaging::kEstimatorIndices, sample_idx_.data(),
                           samples * sizeof(int64_t), true, &idx));
    SCCL_CHECK(stagedArray(q.device, DeviceStaging::kEstimatorValues, sample_val_.data(),
                           samples * element, false, &values));
    SCCL_CHECK(kernels.gather(q.acc, q.acc_dtype, static_cast<const int64_t*>(idx), samples, values,
                              q.stream));
    SCCL_CHECK(unstageArray(q.device, sample_val_.data(), values, samples * element));
    double t = 0;
    SCCL_CHECK(cpuKernels().kthLargestAbs(sample_val_.data(), q.acc_dtype, 0, samples, sample_k, &t,
                                          nullptr));
    if (std::isnan(t)) {
      *out = kInfinity;
      return scclSuccess;
    }
    // Exact zeros carry nothing: a zero sample threshold becomes the smallest denormal.
    t = std::max(t, std::numeric_limits<double>::denorm_min());
    AbsMoments above;
    SCCL_CHECK(kernels.absMoments(q.acc, q.acc_dtype, q.range.begin, q.range.end, t, false, &above,
                                  q.stream));
    if (above.count == 0) {
      *out = kInfinity;  // nothing non-zero at or above the sample's threshold: select nothing
      return scclSuccess;
    }
    if (above.count * 3 <= 4 * k) {
      *out = t;
      return scclSuccess;
    }
    // Trim exactly to k: the k-th largest of the range, found among the selected entries.
    double exact = 0;
    if (above.count <= n / 4) {
      selected_idx_.resize(above.count);
      selected_val_.resize(above.count * element);
      void* selected_idx = nullptr;
      void* selected_val = nullptr;
      SCCL_CHECK(stagedArray(q.device, DeviceStaging::kEstimatorIndices, selected_idx_.data(),
                             above.count * sizeof(int64_t), false, &selected_idx));
      SCCL_CHECK(stagedArray(q.device, DeviceStaging::kEstimatorValues, selected_val_.data(),
                             above.count * element, false, &selected_val));
      size_t got = 0;
      SCCL_CHECK(kernels.selectAbove(q.acc, q.acc_dtype, q.range.begin, q.range.end, t,
                                     static_cast<int64_t*>(selected_idx), selected_val, above.count,
                                     &got, q.stream));
      const size_t kept = std::min<size_t>(got, above.count);
      SCCL_CHECK(unstageArray(q.device, selected_val_.data(), selected_val, kept * element));
      SCCL_CHECK(cpuKernels().kthLargestAbs(selected_val_.data(), q.acc_dtype, 0, kept,
                                            std::min<uint64_t>(k, kept), &exact, nullptr));
    } else {
      SCCL_CHECK(kernels.kthLargestAbs(q.acc, q.acc_dtype, q.range.begin, q.range.end, k, &exact,
                                       q.stream));
    }
    trimmed_ = true;
    *out = std::isnan(exact) ? kInfinity : exact;
    return scclSuccess;
  }

  double sample_ratio_;
  uint64_t seed_;
  bool trimmed_ = false;
  double last_ = 0;
  std::vector<int64_t> sample_idx_, selected_idx_;
  std::vector<unsigned char> sample_val_, selected_val_;
};

}  // namespace

scclResult_t createDgcEstimator(const EstimatorParams& params,
                                std::unique_ptr<ThresholdEstimator>* out) {
  *out = std::make_unique<DgcEstimator>(params.dgc_sample_ratio, params.dgc_seed);
  return scclSuccess;
}

}  // namespace sccl
