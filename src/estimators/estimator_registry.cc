// The threshold estimators of this build. A new estimator adds one line here, its file and a
// CMake line.
#include <cmath>
#include <string>

#include "core/error.h"
#include "estimators/estimator_factories.h"
#include "estimators/threshold_estimator.h"

namespace sccl {

const std::vector<EstimatorEntry>& estimatorRegistry() {
  static const std::vector<EstimatorEntry> entries = {
      {"topk", "exact: the k-th largest |x| of the rank's range (selection trimmed to k)",
       createTopkEstimator},
      {"fixed", "hard threshold: a constant, 1/(2 sqrt(k)) unless given", createFixedEstimator},
      {"scaling", "online threshold scaling by the density error (MiCRO, ExDyna Alg. 5)",
       createScalingEstimator},
      {"sidco_exp", "SIDCo-E: multi-stage exponential fit of |x|", createSidcoExpEstimator},
      {"sidco_gp", "SIDCo-GP: multi-stage generalised Pareto fit (method of moments)",
       createSidcoGpEstimator},
      {"sidco_gamma_gp", "SIDCo-P: gamma first stage, generalised Pareto later stages",
       createSidcoGammaGpEstimator},
      {"dgc", "DGC: top of a seeded 1 % sample, trimmed to k above 4k/3", createDgcEstimator},
      {"redsync", "RedSync: bisection of mean + r (max - mean)", createRedsyncEstimator},
      {"gaussiank", "GaussianK-SGD: mean + Phi^-1(1 - delta/2) sd, up to 3 corrections",
       createGaussiankEstimator},
  };
  return entries;
}

uint64_t targetSelectionCount(double density, size_t count) {
  const double k = std::floor(density * static_cast<double>(count));
  // !(k >= 1) also catches NaN; the clamp keeps the cast defined for densities above 1.
  if (!(k >= 1)) return 1;
  if (k >= static_cast<double>(count)) return count > 0 ? count : 1;
  return static_cast<uint64_t>(k);
}

scclResult_t loadLastThreshold(const char* estimator, StateReader& own, double* last) {
  double value = 0;
  SCCL_CHECK(own.f64("last threshold", &value));
  SCCL_REQUIRE_ARG(value >= 0, "sparsifier checkpoint: estimator '%s''s last threshold is %g",
                   estimator, value);
  *last = value;
  return scclSuccess;
}

double defaultThreshold(double density, size_t count) {
  return 1.0 / (2.0 * std::sqrt(static_cast<double>(targetSelectionCount(density, count))));
}

namespace {

scclResult_t validateSharedParams(const char* name, const EstimatorParams& p) {
  SCCL_REQUIRE_ARG(p.density > 0 && p.density <= 1,
                   "estimator '%s': density must be in (0, 1] (got %g)", name, p.density);
  SCCL_REQUIRE_ARG(p.nranks >= 1, "estimator '%s': nranks must be >= 1 (got %d)", name, p.nranks);
  const std::string prefix = std::string("estimator '") + name + "': ";
  return checkKnobs<EstimatorKnobs>(p, prefix.c_str());
}

}  // namespace

scclResult_t makeEstimator(const std::string& name, const EstimatorParams& params,
                           std::unique_ptr<ThresholdEstimator>* out) {
  SCCL_REQUIRE_ARG(out != nullptr, "makeEstimator: out is null");
  std::string known;
  for (const EstimatorEntry& entry : estimatorRegistry()) {
    if (name == entry.name) {
      SCCL_CHECK(validateSharedParams(entry.name, params));
      return entry.create(params, out);
    }
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  return fail(scclInvalidArgument, "unknown estimator '%s' (known: %s)", name.c_str(),
              known.c_str());
}

}  // namespace sccl
