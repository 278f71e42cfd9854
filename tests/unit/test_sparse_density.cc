// Density control and load balance of the sparse all-reduce over 4 in-process ranks, measured
// through scclSparseStats_t, in both density-control modes of MiCRO and ExDyna:
//  - the presets' default, threshold scaling plus the in-call histogram correction
//    (densityCorrection "histogram", algorithms/density_correction.cc): k'/k within about 1 % on
//    every stream, the real gradient traces included;
//  - the papers' threshold scaling alone (densityCorrection "none"), which follows only what
//    persists from one call to the next: it holds the target on drifting Laplace streams, and
//    misses by tens of percent on consecutive real training steps, whose mini-batch gradients
//    jump in scale from one step to the next (figures printed with WARN).
// Also: the hard threshold is many times off the target on real gradients; Top-k's gradient
// build-up (k'/k grows with n); ExDyna's rebalancing lowers the all-gather inflation f(t) below
// MiCRO's on a skewed load.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/laplace_streams.h"
#include "support/sparse_runs.h"
#include "support/sparse_streams.h"

using namespace sccl_test;

namespace {

constexpr int kRanks = 4;

struct DensityCase {
  const char* algorithm;
  size_t count;
  double density;
  int error_feedback;
  int calls;
  size_t from;                    // mean over calls [from, calls)
  const char* correction = NULL;  // densityCorrection: NULL (the preset's), "none"
};

// Runs a Laplace stream whose scale is b * drift(t) and returns the mean |k'/k - 1| over
// [from, calls) as every rank saw it (checked identical).
template <typename Drift>
double laplaceDensityError(const DensityCase& c, Drift drift) {
  auto config = sparseConfig(c.algorithm, c.density);
  config.errorFeedback = c.error_feedback;
  config.densityCorrection = c.correction;
  const double b = laplaceScaleFor(c.count, c.density);
  GradientFill fill = [&](int rank, uint64_t t, float* grad) {
    fillLaplace(5, rank, t, grad, c.count, float(b * drift(t)));
  };
  StreamRun run = runSparseStream(kRanks, c.count, config, c.calls, fill);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  for (size_t t = 0; t < run.calls.size(); ++t)
    for (int r = 1; r < kRanks; ++r)
      REQUIRE(run.calls[t][r].stats.kGlobal == run.calls[t][0].stats.kGlobal);
  // The library's own running mean since creation agrees with the per-call figures.
  CHECK(run.calls.back()[0].stats.meanAbsDensityError ==
        Approx(meanAbsDensityError(run, 0, size_t(c.calls))).epsilon(1e-9));
  const double error = meanAbsDensityError(run, c.from, size_t(c.calls));
  WARN(c.algorithm << " correction " << (c.correction ? c.correction : "preset") << " count "
                   << c.count << " density " << c.density << " error feedback " << c.error_feedback
                   << ": mean |k'/k - 1| over calls [" << c.from << ", " << c.calls << ") = "
                   << error << " (mean k'/k " << meanDensityRatio(run, c.from, size_t(c.calls))
                   << ", calls [0, 50): " << meanAbsDensityError(run, 0, 50) << ")");
  return error;
}

// +0.2 % per call: a gradient scale that keeps moving.
double drift(uint64_t t) {
  return std::pow(1.002, double(t));
}
// +-10 % over 1000 calls: at most 0.063 % per call.
double slowWave(uint64_t t) {
  return 1 + 0.1 * std::sin(2 * M_PI * double(t) / 1000.0);
}

struct TraceSet {
  std::vector<std::vector<std::vector<float>>> streams;  // [worker][trace in iteration order]
  std::vector<uint32_t> iterations;
  size_t consecutive_from = 0;  // streams[w][consecutive_from ..] are consecutive steps
};

TraceSet traceSet() {
  TraceSet set;
  std::string error;
  set.streams =
      loadTraceStreams(std::string(SCCL_TEST_DATA_DIR) + "/traces", &error, &set.iterations);
  INFO(error);
  REQUIRE(set.streams.size() == size_t(kRanks));
  REQUIRE(set.iterations.size() >= 10);
  // The longest run of consecutive iterations at the end (1391-1400 in the committed set).
  set.consecutive_from = set.iterations.size() - 1;
  while (set.consecutive_from > 0 &&
         set.iterations[set.consecutive_from - 1] + 1 == set.iterations[set.consecutive_from])
    --set.consecutive_from;
  REQUIRE(set.iterations.size() - set.consecutive_from >= 10);
  return set;
}

// Rank r's gradient at call t: worker r's traces from `from` on, in iteration order, cycled.
StreamRun runTraces(const TraceSet& set, size_t from, int nranks, const scclSparseConfig_t& config,
                    int calls) {
  const size_t count = set.streams[0][0].size();
  const size_t length = set.streams[0].size() - from;
  GradientFill fill = [&](int rank, uint64_t t, float* grad) {
    const auto& trace = set.streams[size_t(rank)][from + t % length];
    std::copy(trace.begin(), trace.end(), grad);
  };
  StreamRun run = runSparseStream(nranks, count, config, calls, fill);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  return run;
}

scclSparseConfig_t withCorrection(scclSparseConfig_t config, const char* correction) {
  config.densityCorrection = correction;
  return config;
}

// Largest |k'/k - 1| over calls [from, to).
double worstDensityError(const StreamRun& run, size_t from, size_t to) {
  double worst = 0;
  for (size_t t = from; t < to; ++t) {
    const scclSparseStats_t& s = run.calls[t][0].stats;
    worst = std::max(worst, std::fabs(double(s.kGlobal) / double(s.kTarget) - 1.0));
  }
  return worst;
}

}  // namespace

TEST_CASE("micro and exdyna hold density 0.01 on a drifting Laplace stream", "[sparse][density]") {
  // Error feedback on (the default) and off, with and without the in-call correction; the scale
  // drifts by 0.2 % per call (and +-10 % in a slow wave): after 50 calls the density error stays
  // within 5 %.
  for (const char* algorithm : {"micro", "exdyna"}) {
    for (const char* correction : {(const char*)NULL, "none"}) {
      for (int error_feedback : {1, 0}) {
        DensityCase c{algorithm, 131072, 0.01, error_feedback, 100, 50, correction};
        CHECK(laplaceDensityError(c, drift) <= 0.05);
        CHECK(laplaceDensityError(c, slowWave) <= 0.05);
      }
    }
  }
}

// k = 1048 at density 0.001: the binomial noise of k' alone has a standard deviation of
// sqrt(k)/k = 3.1 %, a mean absolute value of about 2.5 % (at 131072 elements k = 131 and the
// noise alone, 0.8 x 8.7 % = 7 %, would exceed the bound): the scaling-only mode is tested
// without error feedback. With error feedback the residual piles up just below the threshold
// over the first hundred calls, and scaling alone lags that transient (measured 0.105 over
// calls [50, 100), printed here); the in-call correction holds it on every call.
TEST_CASE("micro holds density 0.001 on a drifting Laplace stream", "[sparse][density]") {
  CHECK(laplaceDensityError({"micro", size_t{1} << 20, 0.001, 0, 100, 50, "none"}, drift) <= 0.05);
  CHECK(laplaceDensityError({"micro", size_t{1} << 20, 0.001, 1, 100, 50}, drift) <= 0.05);
  laplaceDensityError({"micro", size_t{1} << 20, 0.001, 1, 100, 50, "none"}, drift);  // printed
}

TEST_CASE("exdyna holds density 0.001 on a drifting Laplace stream", "[sparse][density]") {
  CHECK(laplaceDensityError({"exdyna", size_t{1} << 20, 0.001, 0, 100, 50, "none"}, drift) <= 0.05);
  CHECK(laplaceDensityError({"exdyna", size_t{1} << 20, 0.001, 1, 100, 50}, drift) <= 0.05);
}

// Consecutive training steps of 4 real workers (iterations 1391-1400 of the committed traces,
// cycled): what a sparse all-reduce sees in training. With the presets' defaults MiCRO and
// ExDyna hold k'/k within 5 % on average after 50 calls (measured 0.5 %) and within 3 % on
// every call after the first two (the correction's bin at the target holds about
// k ln(1/density) / 256 = 1.8 % of k, half of which is the worst rounding). Scaling alone misses
// by tens of percent here (measured about 0.2-0.3): each step's mini-batch gradient has its own
// scale, and a threshold fed back from the last call cannot know it.
TEST_CASE("micro and exdyna hold the density on consecutive real training steps",
          "[sparse][density][trace]") {
  const TraceSet set = traceSet();
  for (const char* algorithm : {"micro", "exdyna"}) {
    for (int error_feedback : {1, 0}) {
      scclSparseConfig_t config = sparseConfig(algorithm, 0.01);
      config.errorFeedback = error_feedback;
      StreamRun corrected = runTraces(set, set.consecutive_from, kRanks, config, 100);
      StreamRun scaled =
          runTraces(set, set.consecutive_from, kRanks, withCorrection(config, "none"), 100);
      const double error = meanAbsDensityError(corrected, 50, 100);
      const double scaled_error = meanAbsDensityError(scaled, 50, 100);
      WARN("consecutive real steps, " << algorithm << " density 0.01 error feedback "
                                      << error_feedback << ": mean |k'/k - 1| over calls [50, 100) "
                                      << error << " (worst " << worstDensityError(corrected, 2, 100)
                                      << " after call 2), scaling alone " << scaled_error);
      CHECK(error <= 0.05);
      CHECK(worstDensityError(corrected, 2, 100) <= 0.03);
      CHECK(error * 5 < scaled_error);
    }
  }
}

TEST_CASE("on the real traces the hard threshold misses the target density by far",
          "[sparse][density][trace]") {
  const TraceSet set = traceSet();
  // The papers report the hard threshold's density tens of times off the target. All committed
  // traces cycled: initialization, early and late training.
  for (double density : {0.01, 0.001}) {
    StreamRun hard = runTraces(set, 0, kRanks, sparseConfig("hard_threshold", density), 100);
    const double ratio = meanDensityRatio(hard, 50, 100);
    WARN("traces, density " << density << ": hard threshold mean k'/k " << ratio
                            << " over calls [50, 100)");
    CHECK((ratio > 2 || ratio < 0.5));
    // MiCRO and ExDyna, on the same stream whose gradient norm swings 5x between stages of
    // training from one call to the next, stay within the acceptance bound.
    for (const char* algorithm : {"micro", "exdyna"}) {
      StreamRun run = runTraces(set, 0, kRanks, sparseConfig(algorithm, density), 100);
      const double error = meanAbsDensityError(run, 50, 100);
      WARN("traces, density " << density << ": " << algorithm << " mean |k'/k - 1| " << error);
      CHECK(error <= 0.05);
    }
  }
}

TEST_CASE("top-k builds up: k'/k grows with the number of ranks", "[sparse][density]") {
  // Data-parallel gradients: a component shared by every rank plus each rank's own noise.
  const size_t count = 65536;
  GradientFill fill = [&](int rank, uint64_t t, float* grad) {
    std::vector<float> shared(count);
    fillLaplace(100, 0, t, shared.data(), count, 1.0f);
    fillLaplace(101, rank, t, grad, count, 1.0f);
    for (size_t i = 0; i < count; ++i) grad[i] = 0.5f * shared[i] + 0.5f * grad[i];
  };
  double previous = 0;
  for (int nranks : {1, 2, 4, 8}) {
    StreamRun run = runSparseStream(nranks, count, sparseConfig("topk", 0.01), 20, fill);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    const double ratio = meanDensityRatio(run, 0, 20);
    WARN("topk synthetic n = " << nranks << ": mean k'/k " << ratio);
    for (const auto& call : run.calls) {
      for (const StreamCall& rank : call) REQUIRE(rank.stats.kLocal == rank.stats.kTarget);
      if (nranks == 1) REQUIRE(call[0].stats.kGlobal == call[0].stats.kTarget);
      if (nranks > 1) REQUIRE(call[0].stats.kGlobal > call[0].stats.kTarget);
      REQUIRE(call[0].stats.kGlobal <= uint64_t(nranks) * call[0].stats.kTarget);
    }
    CHECK(ratio > previous);
    previous = ratio;
  }
  // The real traces (consecutive steps), workers 0 .. n-1.
  const TraceSet set = traceSet();
  previous = 0;
  for (int nranks : {1, 2, 4}) {
    StreamRun run = runTraces(set, set.consecutive_from, nranks, sparseConfig("topk", 0.01), 30);
    const double ratio = meanDensityRatio(run, 0, 30);
    WARN("topk traces n = " << nranks << ": mean k'/k " << ratio);
    if (nranks == 1) CHECK(ratio == 1.0);
    if (nranks > 1) CHECK(ratio > 1.0);
    CHECK(ratio > previous);
    previous = ratio;
  }
}

TEST_CASE("exdyna has a lower gather inflation than micro on a skewed load",
          "[sparse][density][partition]") {
  // The first 20 % of the vector has 10x the scale of the rest: MiCRO's equal partitions put
  // most of k' in one rank's range, ExDyna moves block boundaries toward the light side.
  const size_t count = 65536;
  const double density = 0.01, b = laplaceScaleFor(count, density);
  GradientFill fill = [&](int rank, uint64_t t, float* grad) {
    fillLaplace(9, rank, t, grad, count, float(b));
    for (size_t i = 0; i < count / 5; ++i) grad[i] *= 10.0f;
  };
  const int calls = 150;
  const size_t from = 50;
  StreamRun micro = runSparseStream(kRanks, count, sparseConfig("micro", density), calls, fill);
  StreamRun exdyna = runSparseStream(kRanks, count, sparseConfig("exdyna", density), calls, fill);
  REQUIRE_NO_RANK_FAILURES(micro.failures);
  REQUIRE_NO_RANK_FAILURES(exdyna.failures);
  const double f_micro = meanGatherInflation(micro, from, calls);
  const double f_exdyna = meanGatherInflation(exdyna, from, calls);
  WARN("skewed load, mean f(t) over calls [" << from << ", " << calls << "): micro " << f_micro
                                             << ", exdyna " << f_exdyna);
  for (size_t t = 0; t < size_t(calls); ++t) {
    // f(t) = n max k_i / k' with disjoint selections (k' = sum of k_i).
    const StreamCall& call = exdyna.calls[t][0];
    uint64_t total = 0, largest = 0;
    for (uint64_t k : call.counts) {
      total += k;
      largest = std::max(largest, k);
    }
    REQUIRE(total == call.stats.kGlobal);
    REQUIRE(call.stats.gatherInflation == double(kRanks) * double(largest) / double(total));
  }
  CHECK(f_micro > 2.0);
  CHECK(f_exdyna < f_micro);
}
