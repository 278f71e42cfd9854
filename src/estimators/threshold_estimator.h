// The estimator axis of a sparsifier: how the selection threshold is found. One registry table
// (estimator_registry.cc):
//   topk     exact: the k-th largest |acc| in the rank's range (kernel kthLargestAbs)
//   fixed    hard threshold: a constant, 1/(2 sqrt(k)) unless given
//   scaling  MiCRO/ExDyna online threshold scaling (Alg. 5) from the last call's k'
//   sidco_exp, sidco_gp, sidco_gamma_gp   SIDCo's multi-stage fitted thresholds
//   dgc      DGC's 1 % sampled threshold, trimmed to k when more than 4k/3 pass
//   redsync  RedSync's bisection between mean and max
//   gaussiank GaussianK-SGD's normal quantile with up to 3 corrections
//
// Determinism: observe() is called on every rank with the same (k', k), and the estimators only
// do arithmetic on those integers and their own state. The data-driven estimators (topk, sidco_*,
// dgc, redsync, gaussiank) compute each rank's threshold from that rank's range with the
// deterministic kernels, so the same inputs give the same thresholds on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "estimators/estimator_knobs.h"
#include "core/state_stream.h"
#include "kernels/kernels.h"
#include "partition/search_space.h"
#include "kernels/shared/scaling_rule.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

class DeviceStaging;

// What an estimator is built from: the configuration's knobs (estimators/estimator_knobs.h) and
// the call's shape.
struct EstimatorParams : EstimatorKnobs {
  double density = 0.01;  // target k / count
  size_t count = 0;
  int nranks = 1;
  bool scaling_proportional = true;  // outside exact target: step by the density error, not gamma
};

struct ThresholdQuery {
  const KernelBackend* kernels = nullptr;
  const void* acc = nullptr;  // accumulated gradient (float32, or float64 for float64 gradients)
  scclDataType_t acc_dtype = scclFloat32;
  IndexRange range;             // where this rank selects
  uint64_t k_target_local = 0;  // entries this rank should select when it selects alone (top-k: k)
  uint64_t iteration = 0;
  void* stream = nullptr;  // the kernels' stream (NULL on the CPU backend)
  // On device buffers: device buffers and copies for an estimator that moves index or value
  // arrays between the kernels and the host (kernels/device_staging.h); null on the CPU.
  DeviceStaging* device = nullptr;
};

class ThresholdEstimator {
 public:
  virtual ~ThresholdEstimator() = default;
  virtual const char* name() const = 0;
  // Asked after each threshold() call: whether that call's selection must be trimmed to exactly
  // k_target_local entries (top-k always; dgc when more than 4k/3 passed its sampled threshold).
  virtual bool exactCount() const { return false; }
  // Whether exactCount() can be true at some call (top-k, dgc). A call path chosen per call must
  // ask this, not exactCount(): that follows one call's data and so can differ between ranks.
  virtual bool mayTrim() const { return false; }
  virtual scclResult_t threshold(const ThresholdQuery& query, double* threshold) = 0;
  // threshold() for a caller that reads a plan back after its selection anyway (the union call on
  // device buffers): an estimator whose last step chooses among counts in the kernels' memory
  // (SIDCo's count check) may leave the threshold there instead of reading the counts back:
  // it writes the threshold's pattern in the accumulator type (thresholdBits) to *bits (the
  // kernels' memory, on the query's stream) and sets *on_device. The caller then selects with
  // KernelBackend::selectAboveCountedAt(bits), reads the pattern back with its plan and hands
  // its value to adoptThreshold() before the call returns, whatever the call's outcome; from
  // then on currentThreshold() is what threshold() would have returned. bits null: threshold().
  // The default asks threshold() and leaves *on_device false.
  virtual scclResult_t thresholdOrWord(const ThresholdQuery& query, uint64_t* bits,
                                       double* threshold, bool* on_device) {
    (void)bits;
    *on_device = false;
    return this->threshold(query, threshold);
  }
  // After every call, identical on every rank: k_global = k' (entries selected by all ranks),
  // k_target = k.
  virtual void observe(uint64_t k_global, uint64_t k_target) = 0;
  virtual double currentThreshold() const = 0;  // for stats (last threshold used or to be used)
  virtual void reset() = 0;
  // True when the threshold is state carried between calls, identical on every rank and
  // independent of this call's data (scaling): the in-call density correction
  // (algorithms/density_correction.h) may then centre its bins on it and hand back the threshold
  // it actually used through adoptThreshold(), before observe(). Estimators that fit the data of
  // the call (top-k, distribution fits) keep the default: not correctable, never adopted.
  virtual bool correctable() const { return false; }
  // True when threshold() does not read the query's data (scaling, fixed): the reduction may
  // then ask before the data is accumulated and select in the same pass that accumulates it
  // (KernelBackend::accumulateSelect).
  virtual bool thresholdBeforeData() const { return correctable(); }
  // Also the threshold a thresholdOrWord() call left in the kernels' memory, read back.
  virtual void adoptThreshold(double /*used*/) {}
  // True when threshold() is the k_target_local-th largest |acc| of the query's range (top-k):
  // a caller that holds every entry at or above some value, at least k of them, may take the
  // k-th largest among those alone and hand it back through adoptThreshold().
  virtual bool thresholdIsKthLargest() const { return false; }
  // The scaling rule, for estimators whose threshold update can run on the device from the
  // gathered counts alone (scaling): the resident sync_free call updates its threshold in a
  // kernel with it (algorithms/resident_sync_free.cc). Others: null.
  virtual const ScalingRule* scalingRule() const { return nullptr; }
  // The target density changed (scclSparsifierSetDensity, a density warm-up), identically on
  // every rank before a call: the estimators whose parameters derive from the density follow
  // (scaling's exponent, SIDCo's stage bound and feedback, fixed's default threshold). The ones
  // that read k from the query (top-k, dgc, redsync, gaussiank) need nothing.
  virtual void setDensity(double /*density*/, size_t /*count*/) {}
  // Checkpoints (sparsifier/sparsifier_state.h): the state carried from call to call, written to
  // `shared` where every rank holds the same value (compared across ranks when a checkpoint is
  // loaded) and to `own` where it is this rank's (a threshold fitted to this rank's range).
  // loadState reads the same fields, in the same order, into an estimator built with the same
  // parameters and given the checkpoint's density; a malformed value is scclInvalidArgument
  // naming the field, and the caller then discards this estimator. What setDensity derives is not
  // written: the sparsifier restores the density first.
  virtual void saveState(StateWriter& /*shared*/, StateWriter& /*own*/) const {}
  virtual scclResult_t loadState(StateReader& /*shared*/, StateReader& /*own*/) {
    return scclSuccess;
  }
};

struct EstimatorEntry {
  const char* name;
  const char* description;
  scclResult_t (*create)(const EstimatorParams&, std::unique_ptr<ThresholdEstimator>*);
};

// One table: topk, fixed, scaling, sidco_exp, sidco_gp, sidco_gamma_gp, dgc, redsync, gaussiank.
const std::vector<EstimatorEntry>& estimatorRegistry();

// Unknown name -> scclInvalidArgument naming it; a knob out of its range (estimator_knobs.h) or
// another bad param -> scclInvalidArgument naming it by its JSON key. *out is set only on success.
scclResult_t makeEstimator(const std::string& name, const EstimatorParams& params,
                           std::unique_ptr<ThresholdEstimator>* out);

// The target number of selected entries: k = max(1, floor(density * count)) in double, as the
// reference's int(density * n_g) but never 0 (a zero target would make k'/k meaningless).
uint64_t targetSelectionCount(double density, size_t count);

// What every estimator that fits this call's data shares: checks the query (threshold output,
// range order; kernels and accumulator when the data is read), answers the cases with nothing to
// fit (empty range or k = 0: +inf, nothing is selected; k >= the range: 0, everything is), and
// otherwise calls fit(k, &value) with k = query.k_target_local. *threshold is set on success.
template <typename Fit>
scclResult_t fittedThreshold(const char* estimator, const ThresholdQuery& query, double* threshold,
                             Fit&& fit);

// An estimator's last threshold as a checkpoint holds it (own state): a number >= 0, infinity
// allowed (an empty range selects nothing); NaN and negatives are scclInvalidArgument.
scclResult_t loadLastThreshold(const char* estimator, StateReader& own, double* last);

// The reference's default threshold 1/(2 sqrt(k)) (the hard-threshold baseline, and MiCRO's and
// ExDyna's delta_0), with k from targetSelectionCount().
double defaultThreshold(double density, size_t count);

template <typename Fit>
scclResult_t fittedThreshold(const char* estimator, const ThresholdQuery& query, double* threshold,
                             Fit&& fit) {
  if (threshold == nullptr) {
    return fail(scclInvalidArgument, "estimator '%s': threshold output is null", estimator);
  }
  const IndexRange& range = query.range;
  if (range.begin > range.end) {
    return fail(scclInvalidArgument, "estimator '%s': range [%zu, %zu) is reversed", estimator,
                range.begin, range.end);
  }
  const uint64_t k = query.k_target_local;
  double value = 0;
  if (range.empty() || k == 0) {
    value = std::numeric_limits<double>::infinity();
  } else if (k < range.size()) {
    if (query.kernels == nullptr || query.acc == nullptr) {
      return fail(scclInvalidArgument, "estimator '%s': kernels or accumulator is null", estimator);
    }
    const scclResult_t fitted = fit(k, &value);
    if (fitted != scclSuccess) return fitted;
  }
  *threshold = value;
  return scclSuccess;
}

}  // namespace sccl
