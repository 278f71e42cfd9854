// Distribution fits and tail quantiles (see distribution_fits.h). Boost.Math (Debian's
// libboost-math-dev, header-only) supplies the special functions; its error policy is set so that
// nothing throws: a domain or overflow error returns NaN or infinity, which the callers test.
#include "estimators/distribution_fits.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/math/policies/policy.hpp>
#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/gamma.hpp>

namespace sccl {
namespace {

using NoThrowPolicy = boost::math::policies::policy<
    boost::math::policies::domain_error<boost::math::policies::ignore_error>,
    boost::math::policies::pole_error<boost::math::policies::ignore_error>,
    boost::math::policies::overflow_error<boost::math::policies::ignore_error>,
    boost::math::policies::underflow_error<boost::math::policies::ignore_error>,
    boost::math::policies::evaluation_error<boost::math::policies::ignore_error>,
    boost::math::policies::promote_double<false>>;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// Variance below this fraction of mean^2 is rounding noise of a constant sample: degenerate.
constexpr double kRelativeVarianceFloor = 1e-12;
// Below this |xi ln(1/p)| the GP quantile is the exponential one (relative error < 1e-8).
constexpr double kGpExponentialLimit = 1e-8;
// Minka's s below this is a constant sample (s = 0 exactly for constant data).
constexpr double kGammaMinS = 1e-12;

bool usableProbability(double p) {
  return p > 0 && p <= 1;
}

}  // namespace

MagnitudeSample sampleFromMoments(const AbsMoments& m, double shift) {
  MagnitudeSample s;
  s.count = m.count;
  s.max = m.max_abs;
  s.min = m.min_abs;
  if (m.count == 0) return s;
  const double n = static_cast<double>(m.count);
  const double mean_abs = m.sum_abs / n;
  s.mean = mean_abs - shift;
  // E[X^2] - E[X]^2 can come out slightly negative by rounding: clamp to 0.
  s.variance = std::max(0.0, m.sum_sq / n - mean_abs * mean_abs);
  const uint64_t nonzero = m.count - m.zero_count;
  s.mean_log = nonzero > 0 ? m.sum_log / static_cast<double>(nonzero) : kNan;
  return s;
}

double exponentialTailQuantile(double mean, double p) {
  if (!(mean > 0) || !std::isfinite(mean) || !usableProbability(p)) return kNan;
  return mean * std::log(1.0 / p);
}

GpFit fitGeneralisedPareto(double mean, double variance) {
  GpFit fit{kNan, kNan};
  if (!(mean > 0) || !std::isfinite(mean) || !std::isfinite(variance)) return fit;
  if (!(variance > kRelativeVarianceFloor * mean * mean)) return fit;
  const double ratio = mean * mean / variance;
  fit.shape = 0.5 * (1.0 - ratio);
  fit.scale = 0.5 * mean * (ratio + 1.0);
  return fit;
}

double gpTailQuantile(const GpFit& fit, double p) {
  if (!std::isfinite(fit.shape) || !(fit.scale > 0) || !std::isfinite(fit.scale) ||
      !usableProbability(p)) {
    return kNan;
  }
  const double log_inverse = std::log(1.0 / p);
  const double exponent = fit.shape * log_inverse;
  if (std::fabs(exponent) < kGpExponentialLimit) return fit.scale * log_inverse;
  const double quantile = fit.scale * std::expm1(exponent) / fit.shape;
  return std::isfinite(quantile) ? quantile : kNan;
}

GammaFit fitGamma(double mean, double mean_log) {
  GammaFit fit{kNan, kNan};
  if (!(mean > 0) || !std::isfinite(mean) || !std::isfinite(mean_log)) return fit;
  const double s = std::log(mean) - mean_log;  // >= 0 by Jensen's inequality, up to rounding
  if (!(s > kGammaMinS) || !std::isfinite(s)) return fit;
  fit.shape = (3.0 - s + std::sqrt((s - 3.0) * (s - 3.0) + 24.0 * s)) / (12.0 * s);
  fit.scale = mean / fit.shape;
  return fit;
}

double gammaTailQuantile(const GammaFit& fit, double p) {
  if (!(fit.shape > 0) || !std::isfinite(fit.shape) || !(fit.scale > 0) ||
      !std::isfinite(fit.scale) || !usableProbability(p)) {
    return kNan;
  }
  if (p == 1) return 0;
  const double x = boost::math::gamma_q_inv(fit.shape, p, NoThrowPolicy());
  const double quantile = fit.scale * x;
  return std::isfinite(quantile) && quantile >= 0 ? quantile : kNan;
}

double normalUpperQuantile(double p) {
  if (!usableProbability(p)) return kNan;
  // Phi^-1(1 - p) = sqrt(2) erfc^-1(2 p); erfc_inv's domain is [0, 2].
  return std::sqrt(2.0) * boost::math::erfc_inv(2.0 * p, NoThrowPolicy());
}

}  // namespace sccl
