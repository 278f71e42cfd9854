// Distribution fits to gradient magnitudes and their tail quantiles, shared by the statistical
// threshold estimators (SIDCo: sidco_exp, sidco_gp, sidco_gamma_gp; GaussianK). Pure functions of
// a few moments, so the fitting pass over the data is the kernel's (KernelBackend::absMoments)
// and these cost O(1). Every function returns NaN when the fit is degenerate or the inputs are
// not usable (zero variance, no samples, non-finite moments); callers then take their documented
// fallback, so no NaN threshold escapes an estimator.
//
// Notation: p is the upper-tail probability to hit (the fraction of the fitted samples that
// should lie at or above the returned quantile), 0 < p <= 1.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace sccl {

// Sample moments of Y = |x| - shift over the elements counted by absMoments (|x| >= floor).
// shift = 0 for a first stage; the previous stage's threshold for the exceedances of a later one.
struct MagnitudeSample {
  uint64_t count = 0;
  double mean = 0;      // of Y
  double variance = 0;  // of Y (= of |x|; shift-invariant), population variance, >= 0
  double mean_log = 0;  // mean ln|x| over the non-zero counted elements (first stage only)
  double max = 0;       // max |x| (not shifted)
  double min = 0;       // min |x| (not shifted)
};

MagnitudeSample sampleFromMoments(const AbsMoments& moments, double shift);

// Exponential with the sample mean (SIDCo-E): quantile = mean * ln(1/p).
double exponentialTailQuantile(double mean, double p);

// Generalised Pareto by the method of moments (SIDCo-GP, Hosking & Wallis):
//   r = mean^2 / variance, shape xi = (1 - r) / 2, scale sigma = mean (r + 1) / 2,
//   quantile = sigma (p^-xi - 1) / xi = sigma expm1(xi ln(1/p)) / xi.
// xi -> 0 (mean^2 ~= variance) is the exponential: when |xi ln(1/p)| < 1e-8 the quantile is
// sigma ln(1/p) (the relative error of that limit is below 1e-8), so nothing divides by ~0.
struct GpFit {
  double shape = 0;  // xi; > 0 heavier than exponential, < 0 bounded support
  double scale = 0;  // sigma
};
GpFit fitGeneralisedPareto(double mean, double variance);  // NaN members if degenerate
double gpTailQuantile(const GpFit& fit, double p);

// Gamma by Minka's closed-form approximation of the maximum-likelihood shape:
//   s = ln(mean) - mean_log, shape a = (3 - s + sqrt((s - 3)^2 + 24 s)) / (12 s), scale = mean/a;
// quantile = scale * Q^-1(a, p), the exact inverse of the regularised upper incomplete gamma
// function (boost::math::gamma_q_inv; the paper's Alg. 1 approximation is not used).
struct GammaFit {
  double shape = 0;
  double scale = 0;
};
GammaFit fitGamma(double mean, double mean_log);  // NaN members if degenerate
double gammaTailQuantile(const GammaFit& fit, double p);

// Phi^-1(1 - p) of the standard normal (boost::math::erfc_inv: sqrt(2) erfc^-1(2 p)).
double normalUpperQuantile(double p);

}  // namespace sccl
