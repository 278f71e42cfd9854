// The threshold estimators (src/estimators/): the target k and the default threshold, the fixed
// threshold, the scaling rules step by step (with our in-band deviation from the reference) and
// their convergence on a Laplace-like magnitude distribution, the exact top-k threshold against a
// brute force with ties and NaN, and the parameter checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "estimators/threshold_estimator.h"
#include "kernels/kernels.h"

namespace {

using sccl::EstimatorParams;
using sccl::ThresholdEstimator;
using sccl::ThresholdQuery;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::unique_ptr<ThresholdEstimator> makeEstimator(const std::string& name,
                                                  const EstimatorParams& params) {
  std::unique_ptr<ThresholdEstimator> estimator;
  REQUIRE(sccl::makeEstimator(name, params, &estimator) == scclSuccess);
  REQUIRE(estimator != nullptr);
  return estimator;
}

double thresholdOf(ThresholdEstimator& estimator, const ThresholdQuery& query = {}) {
  double value = -1;
  REQUIRE(estimator.threshold(query, &value) == scclSuccess);
  return value;
}

EstimatorParams paramsFor(double density, size_t count, double threshold = -1) {
  EstimatorParams params;
  params.density = density;
  params.count = count;
  params.threshold = threshold;
  return params;
}

TEST_CASE("the target count is floor of density times count and at least one", "[estimator]") {
  REQUIRE(sccl::targetSelectionCount(0.01, 1000000) == 10000);
  REQUIRE(sccl::targetSelectionCount(0.001, 26000000) == 26000);
  REQUIRE(sccl::targetSelectionCount(0.01, 50) == 1);
  REQUIRE(sccl::targetSelectionCount(0.01, 0) == 1);
  REQUIRE(sccl::targetSelectionCount(1.0, 7) == 7);
  REQUIRE(sccl::defaultThreshold(0.01, 1000000) == 0.005);  // 1 / (2 * sqrt(10000))
}

TEST_CASE("the fixed estimator keeps one threshold", "[estimator]") {
  auto by_default = makeEstimator("fixed", paramsFor(0.01, 1000000));
  REQUIRE(std::string(by_default->name()) == "fixed");
  REQUIRE_FALSE(by_default->exactCount());
  REQUIRE(thresholdOf(*by_default) == 0.005);
  by_default->observe(900000, 10000);
  by_default->observe(0, 10000);
  REQUIRE(thresholdOf(*by_default) == 0.005);
  REQUIRE(by_default->currentThreshold() == 0.005);
  auto given = makeEstimator("fixed", paramsFor(0.01, 1000000, 0.25));
  REQUIRE(thresholdOf(*given) == 0.25);
  auto zero = makeEstimator("fixed", paramsFor(0.01, 1000000, 0.0));  // selects everything
  REQUIRE(thresholdOf(*zero) == 0.0);
}

TEST_CASE("the scaling estimator follows the band rules step by step", "[estimator]") {
  EstimatorParams band_params = paramsFor(0.001, 1000000, 0.1);  // k = 1000
  band_params.scaling_proportional = false;
  auto scaling = makeEstimator("scaling", band_params);
  REQUIRE(std::string(scaling->name()) == "scaling");
  REQUIRE_FALSE(scaling->exactCount());
  double expected = 0.1;
  REQUIRE(thresholdOf(*scaling) == expected);
  struct Step {
    uint64_t k_global;
    double factor;
  };
  const Step steps[] = {
      {1200, 1.005},    // above the band: up by gamma
      {1101, 1.005},    // just above 1.1 * k
      {1100, 1.00125},  // exam = beta is inside the band: up by gamma / 4
      {1001, 1.00125},  // inside, above target
      {1000, 1.0},      // on target: unchanged (the reference would still raise it)
      {999, 0.99875},   // inside, below target: down by gamma / 4 (the reference raises it)
      {910, 0.99875},   // 0.91 > 1 / 1.1
      {909, 0.995},     // 0.909 < 1 / 1.1: below the band, down by gamma
      {0, 0.995},       // nothing selected
  };
  for (const Step& step : steps) {
    INFO("k' = " << step.k_global);
    scaling->observe(step.k_global, 1000);
    expected *= step.factor;
    REQUIRE(scaling->currentThreshold() == expected);
    REQUIRE(thresholdOf(*scaling) == expected);
  }
  scaling->reset();
  REQUIRE(thresholdOf(*scaling) == 0.1);
  // Another band and step; the default initial threshold is the hard-threshold value.
  EstimatorParams params = paramsFor(0.01, 1000000);
  params.scaling_band = 1.5;
  params.scaling_step = 0.1;
  params.scaling_proportional = false;
  auto wide = makeEstimator("scaling", params);
  REQUIRE(thresholdOf(*wide) == 0.005);
  wide->observe(14000, 10000);
  REQUIRE(wide->currentThreshold() == 0.005 * 1.025);
  wide->observe(16000, 10000);
  REQUIRE(wide->currentThreshold() == 0.005 * 1.025 * 1.1);
}

TEST_CASE("the proportional scaling rule steps by a power of the density error", "[estimator]") {
  auto scaling = makeEstimator("scaling", paramsFor(0.001, 1000000, 0.1));  // k = 1000
  const double exponent = 0.5 / std::log(1000.0);
  double expected = 0.1;
  struct Step {
    uint64_t k_global;
    double factor;
  };
  const Step steps[] = {
      {2000, std::pow(2.0, exponent)},      // twice the target: up
      {1000, 1.0},                          // on target: unchanged
      {500, std::pow(0.5, exponent)},       // half: down by the same factor
      {0, std::pow(0.5 / 1000, exponent)},  // nothing selected: counted as half an entry
      {1000000000000, 4.0},                 // 1e9 x the target: clamped to 4x per call
  };
  for (const Step& step : steps) {
    INFO("k' = " << step.k_global);
    scaling->observe(step.k_global, 1000);
    expected *= std::clamp(step.factor, 0.25, 4.0);
    REQUIRE(scaling->currentThreshold() == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("the scaling estimator can always come back from long one-sided runs", "[estimator]") {
  auto scaling = makeEstimator("scaling", paramsFor(0.01, 1000000));
  for (int i = 0; i < 200000; ++i) scaling->observe(0, 10000);  // would underflow to 0
  REQUIRE(scaling->currentThreshold() >= DBL_MIN);
  const double low = scaling->currentThreshold();
  scaling->observe(20000, 10000);
  REQUIRE(scaling->currentThreshold() > low);
  for (int i = 0; i < 200000; ++i) scaling->observe(20000, 10000);  // would overflow
  REQUIRE(std::isfinite(scaling->currentThreshold()));
  const double high = scaling->currentThreshold();
  scaling->observe(0, 10000);
  REQUIRE(scaling->currentThreshold() < high);
}

// Selected count of a Laplace-like magnitude distribution with scale b: P(|x| >= d) = exp(-d/b).
uint64_t laplaceSelected(double count, double threshold, double scale) {
  return static_cast<uint64_t>(count * std::exp(-threshold / scale));
}

// The reference rule (always up by gamma/4 inside the band), for comparison only.
double referenceFactor(double exam) {
  if (exam > 1.1) return 1.005;
  if (exam > 1 / 1.1) return 1.00125;
  return 0.995;
}

TEST_CASE("the scaling estimator converges to the target density", "[estimator]") {
  const size_t count = 10000000;
  const double density = 0.001;
  const uint64_t k = sccl::targetSelectionCount(density, count);
  // delta_0 = 0.005; the target threshold b * ln(count / k) is 10 % above it.
  const double b0 = 0.0055 / std::log(1000.0);
  for (bool drifting : {false, true}) {
    INFO((drifting ? "drifting scale" : "fixed scale"));
    auto scaling = makeEstimator("scaling", paramsFor(density, count));
    double reference_threshold = scaling->currentThreshold();
    double error = 0, mean_exam = 0, reference_mean_exam = 0;
    const int iterations = 2000, settle = 50;
    for (int t = 0; t < iterations; ++t) {
      // Drift: +-20 % over a period of 2000 iterations (training makes gradients shrink/grow).
      const double b = drifting ? b0 * (1 + 0.2 * std::sin(2 * M_PI * t / 2000.0)) : b0;
      const uint64_t selected = laplaceSelected(count, scaling->currentThreshold(), b);
      const double exam = static_cast<double>(selected) / static_cast<double>(k);
      const double reference_exam =
          static_cast<double>(laplaceSelected(count, reference_threshold, b)) / k;
      scaling->observe(selected, k);
      reference_threshold *= referenceFactor(reference_exam);
      if (t >= settle) {
        error += std::fabs(exam - 1) / (iterations - settle);
        mean_exam += exam / (iterations - settle);
        reference_mean_exam += reference_exam / (iterations - settle);
      }
    }
    INFO("mean |k'/k - 1| " << error << ", mean k'/k " << mean_exam << ", reference "
                            << reference_mean_exam);
    REQUIRE(error < 0.05);
    REQUIRE(std::fabs(mean_exam - 1) < 0.01);
    // The reference's in-band rule sits below the target; stepping toward it removes the bias.
    REQUIRE(std::fabs(mean_exam - 1) < std::fabs(reference_mean_exam - 1));
  }
}

// The brute-force k-th largest |x| over [begin, end), NaN above +inf; what the estimator returns
// for it (a NaN answer becomes +inf: there are at least k NaNs and a +inf threshold takes them).
double bruteThreshold(const std::vector<double>& values, size_t begin, size_t end, uint64_t k) {
  std::vector<std::pair<bool, double>> keys;  // (is NaN, |x|), largest first after sorting
  for (size_t i = begin; i < end; ++i)
    keys.emplace_back(std::isnan(values[i]), std::fabs(values[i]));
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first : (!a.first && a.second > b.second);
  });
  const auto& kth = keys[k - 1];
  return kth.first ? kInf : kth.second;
}

template <typename T>
void checkTopkAgainstBruteForce(const std::vector<double>& values, scclDataType_t dtype) {
  const std::vector<T> buffer(values.begin(), values.end());
  auto topk = makeEstimator("topk", paramsFor(0.01, buffer.size()));
  REQUIRE(topk->exactCount());
  ThresholdQuery query;
  query.kernels = &sccl::cpuKernels();
  query.acc = buffer.data();
  query.acc_dtype = dtype;
  for (size_t begin = 0; begin < buffer.size(); ++begin) {
    for (size_t end = begin; end <= buffer.size(); ++end) {
      query.range = {begin, end};
      for (uint64_t k = 0; k <= end - begin + 1; ++k) {
        INFO("range [" << begin << ", " << end << ") k " << k);
        query.k_target_local = k;
        double expected = 0;  // k >= range size: everything qualifies
        if (k == 0 || begin == end) {
          expected = kInf;  // nothing to select
        } else if (k < end - begin) {
          expected = bruteThreshold(values, begin, end, k);
        }
        REQUIRE(thresholdOf(*topk, query) == expected);
        REQUIRE(topk->currentThreshold() == expected);
      }
    }
  }
}

TEST_CASE("the topk threshold is the k-th largest magnitude with ties and NaN", "[estimator]") {
  const std::vector<double> values = {0.5,  -2,    2, 0,   -0.0, 1,    -1,  kNan,
                                      kInf, -kInf, 2, 0.5, 3,    kNan, -0.5};
  checkTopkAgainstBruteForce<float>(values, scclFloat32);
  checkTopkAgainstBruteForce<double>(values, scclFloat64);
  // A pseudo-random longer vector with many ties.
  std::vector<double> many;
  uint64_t state = 12345;
  for (int i = 0; i < 40; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    many.push_back(static_cast<double>(static_cast<int>(state >> 59) - 16) / 4);
  }
  checkTopkAgainstBruteForce<float>(many, scclFloat32);
  // Bad queries are refused before any kernel runs.
  auto topk = makeEstimator("topk", paramsFor(0.01, 10));
  ThresholdQuery reversed;
  reversed.range = {5, 3};
  reversed.k_target_local = 1;
  double value = 0;
  REQUIRE(topk->threshold(reversed, &value) == scclInvalidArgument);
  ThresholdQuery no_kernels;
  no_kernels.range = {0, 10};
  no_kernels.k_target_local = 3;
  REQUIRE(topk->threshold(no_kernels, &value) == scclInvalidArgument);
  REQUIRE(topk->threshold(no_kernels, nullptr) == scclInvalidArgument);
}

TEST_CASE("estimator parameters are checked and named", "[estimator]") {
  auto rejects = [](const std::string& name, const EstimatorParams& params, const char* knob) {
    std::unique_ptr<ThresholdEstimator> estimator;
    REQUIRE(sccl::makeEstimator(name, params, &estimator) == scclInvalidArgument);
    REQUIRE(estimator == nullptr);
    INFO(sccl::threadLastError());
    REQUIRE(sccl::threadLastError().find(knob) != std::string::npos);
  };
  const EstimatorParams good = paramsFor(0.01, 1000);
  auto with = [&good](auto change) {
    EstimatorParams p = good;
    change(p);
    return p;
  };
  rejects("sidco_magic", good, "sidco_magic");
  for (const char* name : {"topk", "fixed", "scaling"}) {
    rejects(name, with([](EstimatorParams& p) { p.density = 0; }), "density");
    rejects(name, with([](EstimatorParams& p) { p.density = -0.1; }), "density");
    rejects(name, with([](EstimatorParams& p) { p.density = 1.5; }), "density");
    rejects(name, with([](EstimatorParams& p) { p.density = kNan; }), "density");
    rejects(name, with([](EstimatorParams& p) { p.nranks = 0; }), "nranks");
    rejects(name, with([](EstimatorParams& p) { p.threshold = kNan; }), "threshold");
  }
  rejects("scaling", with([](EstimatorParams& p) { p.scaling_band = 1.0; }), "scaling_band");
  rejects("scaling", with([](EstimatorParams& p) { p.scaling_band = 0.5; }), "scaling_band");
  rejects("scaling", with([](EstimatorParams& p) { p.scaling_step = 0; }), "scaling_step");
  rejects("scaling", with([](EstimatorParams& p) { p.scaling_step = 1; }), "scaling_step");
  rejects("scaling", with([](EstimatorParams& p) { p.scaling_step = -0.01; }), "scaling_step");
  rejects("scaling", with([](EstimatorParams& p) { p.threshold = 0; }), "threshold");
  rejects("scaling", with([](EstimatorParams& p) { p.threshold = kInf; }), "threshold");
  std::unique_ptr<ThresholdEstimator> estimator;
  REQUIRE(sccl::makeEstimator("fixed", good, nullptr) == scclInvalidArgument);
  REQUIRE(sccl::estimatorRegistry().size() == 9);
  for (const auto& entry : sccl::estimatorRegistry()) {
    REQUIRE(sccl::makeEstimator(entry.name, good, &estimator) == scclSuccess);
    REQUIRE(std::string(estimator->name()) == entry.name);
  }
}

}  // namespace
