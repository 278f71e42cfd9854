// Density schedules: scclSparsifierSetDensity and the config's density warm-up
// (densityWarmupStart / densityWarmupCalls / densityWarmupForm). The density of a call is a pure
// function of the agreed call number, so every rank has the same k; a rank that sets another
// density makes the next call fail its agreement on every rank, and an agreed density resumes.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/laplace_streams.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"
#include "support/sparse_streams.h"

using namespace sccl_test;

namespace {

uint64_t expectedK(double density, size_t count) {
  return std::max<uint64_t>(1, uint64_t(std::floor(density * double(count))));
}

// The documented schedule (include/sparsecoll/sparsecoll.h, docs/api.md).
double scheduledDensity(double start, double target, int calls, const char* form, uint64_t t) {
  if (t >= uint64_t(calls)) return target;
  const double progress = double(t) / double(calls);
  return std::strcmp(form, "linear") == 0 ? start + (target - start) * progress
                                          : start * std::pow(target / start, progress);
}

scclSparseStats_t statsOf(scclSparsifier_t sp) {
  scclSparseStats_t stats{};
  stats.size = sizeof(stats);
  scclSparsifierGetStats(sp, &stats);
  return stats;
}

}  // namespace

TEST_CASE("density: scclSparsifierSetDensity changes k at the next call", "[density]") {
  constexpr size_t kCount = 10000;
  auto failures = runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    auto config = sparseConfig("topk", 0.01);
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    std::vector<float> grad(kCount), out(kCount);
    for (size_t i = 0; i < kCount; ++i) grad[i] = gradientValue(3, rank, 0, i);
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "call 0");
    log.check(statsOf(sp).kTarget == 100 && statsOf(sp).kLocal == 100, "k = 100 at 0.01");
    log.checkResult(scclSparsifierSetDensity(sp, 0.05), scclSuccess, "SetDensity 0.05");
    log.check(statsOf(sp).kTarget == 100, "kTarget unchanged until the next call");
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "call 1");
    const scclSparseStats_t s = statsOf(sp);
    log.check(s.kTarget == 500 && s.kLocal == 500, "k = 500 at 0.05, got kTarget " +
                                                       std::to_string(s.kTarget) + " kLocal " +
                                                       std::to_string(s.kLocal));
    // Reset keeps the set density (the config's target) and restarts the call count.
    log.checkResult(scclSparsifierReset(sp), scclSuccess, "reset");
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "call after reset");
    log.check(statsOf(sp).kTarget == 500, "k stays 500 after reset");
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("density warm-up gives the documented density per call on every rank", "[density]") {
  constexpr size_t kCount = 20000;
  constexpr int kRanks = 4;
  for (const char* form : {"exponential", "linear"}) {
    for (const char* algorithm : {"micro", "exdyna", "topk", "micro_sync_free"}) {
      INFO(algorithm << " " << form);
      auto config = sparseConfig(algorithm, 0.01);
      config.densityWarmupStart = 0.25;
      config.densityWarmupCalls = 20;
      config.densityWarmupForm = form;
      GradientFill fill = [](int rank, uint64_t t, float* grad) {
        fillLaplace(7, rank, t, grad, kCount, 0.01f);
      };
      StreamRun run = runSparseStream(kRanks, kCount, config, 24, fill);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      for (uint64_t t = 0; t < 24; ++t) {
        const uint64_t want = expectedK(scheduledDensity(0.25, 0.01, 20, form, t), kCount);
        for (int r = 0; r < kRanks; ++r) {
          INFO("call " << t << " rank " << r);
          REQUIRE(run.calls[t][size_t(r)].stats.kTarget == want);
          REQUIRE(run.calls[t][size_t(r)].stats.kGlobal == run.calls[t][0].stats.kGlobal);
        }
      }
    }
  }
  // DGC's schedule: 25 %, 6.25 %, 1.5625 %, 0.390625 %, then the target "0.1 %", which is
  // 0.25 / 4^4 = 2^-10 (4 warm-up calls, a factor 4 each).
  auto config = sparseConfig("topk", 0.0009765625);
  config.densityWarmupStart = 0.25;
  config.densityWarmupCalls = 4;
  GradientFill fill = [](int rank, uint64_t t, float* grad) {
    fillLaplace(9, rank, t, grad, 100000, 0.01f);
  };
  StreamRun run = runSparseStream(2, 100000, config, 6, fill);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  const uint64_t dgc[] = {25000, 6250, 1562, 390, 97, 97};
  for (size_t t = 0; t < 6; ++t) CHECK(run.calls[t][0].stats.kTarget == dgc[t]);
}

TEST_CASE("density warm-up reaches the target within 1 % with micro and exdyna", "[density]") {
  constexpr size_t kCount = 100000;
  constexpr int kRanks = 4;
  constexpr int kWarmup = 20, kCalls = 40;
  for (const char* algorithm : {"micro", "exdyna"}) {
    auto config = sparseConfig(algorithm, 0.01);
    config.densityWarmupStart = 0.25;
    config.densityWarmupCalls = kWarmup;
    const float b = float(laplaceScaleFor(kCount, 0.01));
    GradientFill fill = [b](int rank, uint64_t t, float* grad) {
      fillLaplace(11, rank, t, grad, kCount, b);
    };
    StreamRun run = runSparseStream(kRanks, kCount, config, kCalls, fill);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    std::string table;
    for (size_t t = 0; t < size_t(kCalls); ++t) {
      const scclSparseStats_t& s = run.calls[t][0].stats;
      if (t < 24 || t + 1 == size_t(kCalls))
        table += "\n  call " + std::to_string(t) + ": kTarget " + std::to_string(s.kTarget) +
                 " kGlobal " + std::to_string(s.kGlobal) + " density " + std::to_string(s.density);
    }
    const double error = meanAbsDensityError(run, kWarmup, size_t(kCalls));
    WARN(algorithm << ", 4 ranks, " << kCount << " elements, warm-up 0.25 -> 0.01 over " << kWarmup
                   << " calls; mean |k'/k - 1| over calls " << kWarmup << ".." << kCalls - 1
                   << " = " << error << table);
    CHECK(run.calls.back()[0].stats.kTarget == 1000);
    CHECK(error < 0.01);
  }
}

TEST_CASE("density mismatch: every rank gets scclInvalidUsage, an agreed density resumes",
          "[density]") {
  constexpr size_t kCount = 4096;
  constexpr int kRanks = 3;
  for (const char* algorithm : {"exdyna", "micro_sync_free", "topk"}) {
    INFO(algorithm);
    auto failures = runLocalRanks(kRanks, [algorithm](int rank, scclComm_t comm, RankLog& log) {
      auto config = sparseConfig(algorithm, 0.05);
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                           scclSuccess, "create"))
        return;
      std::vector<float> grad(kCount), out(kCount);
      auto call = [&](uint64_t t) {
        for (size_t i = 0; i < kCount; ++i) grad[i] = gradientValue(5, rank, t, i);
        return scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp, comm,
                                   nullptr);
      };
      log.checkResult(call(0), scclSuccess, "call 0");
      if (rank == 1) log.checkResult(scclSparsifierSetDensity(sp, 0.02), scclSuccess, "set 0.02");
      log.checkResult(call(1), scclInvalidUsage, "call with mismatched densities");
      log.check(std::strlen(scclGetLastError(comm)) > 0, "a message");
      log.check(statsOf(sp).iteration == 1, "the refused call did not count");
      // Every rank agrees on 0.02 now: the communicator and the sparsifier carry on.
      log.checkResult(scclSparsifierSetDensity(sp, 0.02), scclSuccess, "set 0.02 everywhere");
      log.checkResult(call(1), scclSuccess, "agreed call");
      log.check(statsOf(sp).kTarget == expectedK(0.02, kCount), "k of 0.02");
      float one = 1, sum = 0;
      log.checkResult(scclAllReduce(&one, &sum, 1, scclFloat32, scclSum, comm, nullptr),
                      scclSuccess, "dense all-reduce after the mismatch");
      log.check(sum == float(kRanks), "dense sum");
      log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
    });
    REQUIRE_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("density: invalid and unsupported densities are refused without side effects",
          "[density]") {
  constexpr size_t kCount = 4096;
  auto failures = runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    std::vector<float> grad(kCount), out(kCount);
    for (size_t i = 0; i < kCount; ++i) grad[i] = gradientValue(2, rank, 0, i);
    auto make = [&](scclSparseConfig_t config, scclSparsifier_t* sp) {
      return log.checkResult(scclSparsifierCreate(sp, comm, kCount, scclFloat32, &config),
                             scclSuccess, std::string("create ") + config.algorithm);
    };
    auto call = [&](scclSparsifier_t sp) {
      return scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp, comm,
                                 nullptr);
    };
    scclSparsifier_t sp = nullptr;
    if (!make(sparseConfig("micro", 0.05), &sp)) return;
    for (double d : {0.0, -0.5, 1.5, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
      log.checkResult(scclSparsifierSetDensity(sp, d), scclInvalidArgument,
                      "density " + std::to_string(d));
      log.check(std::strstr(scclGetLastError(nullptr), "density") != nullptr, "message");
    }
    log.checkResult(call(sp), scclSuccess, "call after the refusals");
    log.check(statsOf(sp).kTarget == expectedK(0.05, kCount), "density unchanged");
    log.checkResult(scclSparsifierSetDensity(sp, 1.0), scclSuccess, "density 1 is valid");
    scclSparsifierDestroy(sp);

    // sync_free: at most the creation's max(density, densityWarmupStart).
    auto sync_free = sparseConfig("exdyna_sync_free", 0.01);
    sync_free.densityWarmupStart = 0.1;
    sync_free.densityWarmupCalls = 5;
    if (!make(sync_free, &sp)) return;
    log.checkResult(scclSparsifierSetDensity(sp, 0.2), scclInvalidArgument, "above the ceiling");
    log.check(std::strstr(scclGetLastError(nullptr), "sync_free") != nullptr, "sync_free message");
    log.checkResult(scclSparsifierSetDensity(sp, 0.1), scclSuccess, "at the ceiling");
    log.checkResult(call(sp), scclSuccess, "call at 0.1");
    log.check(statsOf(sp).kTarget == expectedK(0.1, kCount), "k of 0.1");
    scclSparsifierDestroy(sp);

    // s2 (sketch): no change, no warm-up.
    if (!make(sparseConfig("s2", 0.01), &sp)) return;
    log.checkResult(scclSparsifierSetDensity(sp, 0.005), scclInvalidArgument, "s2 change");
    log.check(std::strstr(scclGetLastError(nullptr), "sketch") != nullptr, "s2 message");
    log.checkResult(scclSparsifierSetDensity(sp, 0.01), scclSuccess, "s2 same density");
    log.checkResult(call(sp), scclSuccess, "s2 call");
    scclSparsifierDestroy(sp);
    auto s2 = sparseConfig("s2", 0.01);
    s2.densityWarmupStart = 0.1;
    s2.densityWarmupCalls = 5;
    log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &s2), scclInvalidArgument,
                    "s2 with a warm-up");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("density warm-up config fields and JSON keys are checked", "[density]") {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  CHECK(config.densityWarmupCalls == 0);
  CHECK(config.densityWarmupStart == 0);
  CHECK(std::strcmp(config.densityWarmupForm, "exponential") == 0);
  REQUIRE(scclSparseConfigFromJson(
              R"({"density": 0.001, "density_warmup": {"start": 0.25, "calls": 100,
                  "form": "linear"}})",
              &config) == scclSuccess);
  CHECK(config.densityWarmupStart == 0.25);
  CHECK(config.densityWarmupCalls == 100);
  CHECK(std::strcmp(config.densityWarmupForm, "linear") == 0);
  REQUIRE(scclSparseConfigFromJson(R"({"density_warmup": {"start": 0.5, "calls": 3}})", &config) ==
          scclSuccess);
  CHECK(std::strcmp(config.densityWarmupForm, "exponential") == 0);
  for (const char* bad :
       {R"({"density_warmup": 0.25})", R"({"density_warmup": {"start": 0.25}})",
        R"({"density_warmup": {"calls": 10}})", R"({"density_warmup": {"start": 0, "calls": 10}})",
        R"({"density_warmup": {"start": 1.5, "calls": 10}})",
        R"({"density_warmup": {"start": 0.2, "calls": -1}})",
        R"({"density_warmup": {"start": 0.2, "calls": 1.5}})",
        R"({"density_warmup": {"start": 0.2, "calls": 10, "form": "cosine"}})",
        R"({"density_warmup": {"start": 0.2, "calls": 10, "steps": 3}})",
        R"({"algorithm": "s2", "density_warmup": {"start": 0.2, "calls": 10}})"}) {
    INFO(bad);
    scclSparseConfig_t before = config;
    CHECK(scclSparseConfigFromJson(bad, &config) == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find("density_warmup") != std::string::npos);
    CHECK(std::memcmp(&before, &config, sizeof(config)) == 0);
  }
}
