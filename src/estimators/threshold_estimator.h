// The estimator axis of a sparsifier: how the selection threshold is found. One registry table
// (estimator_registry.cc):
//   topk     exact: the k-th largest |acc| in the rank's range (kernel kthLargestAbs)
//   fixed    hard threshold: a constant, 1/(2 sqrt(k)) unless given
//   scaling  MiCRO/ExDyna online threshold scaling (Alg. 5) from the last call's k'
//
// Determinism: observe() is called on every rank with the same (k', k), and the estimators only
// do arithmetic on those integers and their own state, so every rank holds the same threshold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "partition/search_space.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

struct EstimatorParams {
  double density = 0.01;  // target k / count
  size_t count = 0;
  int nranks = 1;
  double threshold = -1;             // fixed threshold (fixed) or initial threshold (scaling); < 0:
                                     // 1/(2*sqrt(k)) as the reference
  double scaling_band = 1.1;         // beta
  double scaling_step = 0.005;       // gamma
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
};

class ThresholdEstimator {
 public:
  virtual ~ThresholdEstimator() = default;
  virtual const char* name() const = 0;
  virtual bool exactCount() const { return false; }  // top-k: the selection must be exactly k
  virtual scclResult_t threshold(const ThresholdQuery& query, double* threshold) = 0;
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
  virtual void adoptThreshold(double /*used*/) {}
};

struct EstimatorEntry {
  const char* name;
  const char* description;
  scclResult_t (*create)(const EstimatorParams&, std::unique_ptr<ThresholdEstimator>*);
};

// One table: topk, fixed, scaling.
const std::vector<EstimatorEntry>& estimatorRegistry();

// Unknown name -> scclInvalidArgument naming it; bad params -> scclInvalidArgument naming the knob
// (JSON name). *out is set only on success.
scclResult_t makeEstimator(const std::string& name, const EstimatorParams& params,
                           std::unique_ptr<ThresholdEstimator>* out);

// The target number of selected entries: k = max(1, floor(density * count)) in double, as the
// reference's int(density * n_g) but never 0 (a zero target would make k'/k meaningless).
uint64_t targetSelectionCount(double density, size_t count);

// The reference's default threshold 1/(2 sqrt(k)) (the hard-threshold baseline, and MiCRO's and
// ExDyna's delta_0), with k from targetSelectionCount().
double defaultThreshold(double density, size_t count);

}  // namespace sccl
