// The sync_free reduction (micro_sync_free, exdyna_sync_free) over in-process ranks: bitwise
// equal to the gather reduction with the same capacity cap, the same bits on every rank, exact
// conservation of every value, the capacity never exceeded, fixed bytes on the wire, and the
// configs it cannot serve refused at creation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "algorithms/sync_free_capacity.h"
#include "support/sparse_runs.h"

using namespace sccl_test;

namespace {

// The same capped selection through the gather reduction: micro/exdyna with the count exchange.
scclSparseConfig_t gatherTwin(const char* sync_free_preset, double density, double slack) {
  const bool micro = std::strcmp(sync_free_preset, "micro_sync_free") == 0;
  scclSparseConfig_t config = sparseConfig(micro ? "micro" : "exdyna", density);
  config.maxDensitySlack = slack;
  config.densityCorrection = "none";
  return config;
}

// The first 20 % of the vector has 10x the scale, so the partition holding it overflows its
// share and the capacity cut is exercised.
GradientFn skewedGradient(uint32_t seed, size_t count) {
  return [seed, count](int r, uint64_t t, size_t i) {
    return gradientValue(seed, r, t, i) * (i < count / 5 ? 10.0f : 1.0f);
  };
}

}  // namespace

TEST_CASE("sync free equals the gather reduction with the same capacity bit for bit",
          "[sparse][sync_free]") {
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    for (int nranks : {1, 2, 3, 4}) {
      for (size_t count : {size_t(1), size_t(1000), size_t(4099)}) {
        for (double slack : {0.0, 0.25}) {
          for (scclRedOp_t op : {scclSum, scclAvg}) {
            GradientFn gradient = skewedGradient(13, count);
            scclSparseConfig_t config = sparseConfig(preset, 0.05);
            config.maxDensitySlack = slack;
            SparseRun run = runSparse(nranks, count, config, 6, gradient, op);
            SparseRun twin =
                runSparse(nranks, count, gatherTwin(preset, 0.05, slack), 6, gradient, op);
            REQUIRE_NO_RANK_FAILURES(run.failures);
            REQUIRE_NO_RANK_FAILURES(twin.failures);
            for (size_t t = 0; t < 6; ++t) {
              for (int r = 0; r < nranks; ++r) {
                INFO(preset << " n=" << nranks << " count=" << count << " slack=" << slack
                            << " avg=" << (op == scclAvg) << " call " << t << " rank " << r);
                const RankIteration& got = run.calls[t][r];
                const RankIteration& want = twin.calls[t][r];
                REQUIRE(got.result == scclSuccess);
                CHECK(got.counts == want.counts);
                CHECK(got.stats.kGlobal == want.stats.kGlobal);
                CHECK(got.stats.threshold == want.stats.threshold);
                CHECK(std::memcmp(got.output.data(), want.output.data(), count * 4) == 0);
                CHECK(std::memcmp(got.residual.data(), want.residual.data(), count * 4) == 0);
              }
            }
          }
        }
      }
    }
  }
}

// Host buffers select from the candidates of the accumulating pass, which hold max(4096, 2C)
// entries; a threshold far below the data overflows them and the selection scans the range. An
// estimator that fits the call's data (top-k, DGC) sets the threshold after the pass, and top-k
// trims to exactly its share. Each must match the gather reduction's host path, which selects
// from the range with its own trims.
TEST_CASE(
    "sync free on host buffers: candidate overflow and data-fitted estimators equal the "
    "gather reduction",
    "[sparse][sync_free]") {
  struct Case {
    const char* estimator;
    // The scaling estimator's initial threshold (< 0: the default). 1e-7 lets nearly every
    // entry of each range through at the first call: more than the candidates' room.
    double threshold;
  };
  const size_t count = 20011;
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    for (const Case c : {Case{"scaling", 1e-7}, Case{"topk", -1.0}, Case{"dgc", -1.0}}) {
      for (int nranks : {1, 2, 3}) {
        GradientFn gradient = skewedGradient(29, count);
        scclSparseConfig_t config = sparseConfig(preset, 0.01);
        config.estimator = c.estimator;
        config.threshold = c.threshold;
        scclSparseConfig_t twin_config = gatherTwin(preset, 0.01, 0.25);
        twin_config.estimator = c.estimator;
        twin_config.threshold = c.threshold;
        SparseRun run = runSparse(nranks, count, config, 5, gradient);
        SparseRun twin = runSparse(nranks, count, twin_config, 5, gradient);
        REQUIRE_NO_RANK_FAILURES(run.failures);
        REQUIRE_NO_RANK_FAILURES(twin.failures);
        for (size_t t = 0; t < 5; ++t) {
          for (int r = 0; r < nranks; ++r) {
            INFO(preset << " " << c.estimator << " n=" << nranks << " call " << t << " rank " << r);
            const RankIteration& got = run.calls[t][r];
            const RankIteration& want = twin.calls[t][r];
            REQUIRE(got.result == scclSuccess);
            CHECK(got.counts == want.counts);
            CHECK(got.stats.kLocal == want.stats.kLocal);
            CHECK(got.stats.threshold == want.stats.threshold);
            CHECK(std::memcmp(got.output.data(), want.output.data(), count * 4) == 0);
            CHECK(std::memcmp(got.residual.data(), want.residual.data(), count * 4) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("sync free gives the same bits on every rank and conserves every value exactly",
          "[sparse][sync_free]") {
  const int nranks = 3, iterations = 12;
  const size_t count = 5003;
  GradientFn gradient = skewedGradient(17, count);
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    SparseRun run = runSparse(nranks, count, sparseConfig(preset, 0.02), iterations, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    std::vector<std::vector<float>> previous(nranks, std::vector<float>(count, 0.0f));
    for (size_t t = 0; t < size_t(iterations); ++t) {
      INFO(preset << " call " << t);
      for (int r = 1; r < nranks; ++r) {
        REQUIRE(std::memcmp(run.calls[t][r].output.data(), run.calls[t][0].output.data(),
                            count * 4) == 0);
      }
      // acc_r = previous residual + gradient. A sent index: every residual is 0 there and the
      // output is the rank-order sum of the accs; an unsent one: every residual keeps its acc.
      size_t sent = 0, violations = 0;
      for (size_t i = 0; i < count; ++i) {
        float acc[nranks];
        for (int r = 0; r < nranks; ++r) acc[r] = previous[r][i] + gradient(r, t, i);
        const float out = run.calls[t][0].output[i];
        if (out != 0.0f) {
          ++sent;
          float sum = acc[0];
          for (int r = 1; r < nranks; ++r) sum += acc[r];
          if (out != sum) ++violations;
          for (int r = 0; r < nranks; ++r)
            if (run.calls[t][r].residual[i] != 0.0f) ++violations;
        } else {
          for (int r = 0; r < nranks; ++r)
            if (run.calls[t][r].residual[i] != acc[r]) ++violations;
        }
      }
      CHECK(violations == 0);
      CHECK(sent == run.calls[t][0].stats.kGlobal);
      for (int r = 0; r < nranks; ++r) previous[r] = run.calls[t][r].residual;
    }
  }
}

TEST_CASE("sync free never sends more than its capacity and moves a fixed number of bytes",
          "[sparse][sync_free]") {
  const size_t count = 20000;
  GradientFn gradient = skewedGradient(23, count);
  for (int nranks : {1, 2, 4}) {
    for (double slack : {-1.0, 0.0, 0.5}) {
      scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
      config.maxDensitySlack = slack;
      SparseRun run = runSparse(nranks, count, config, 8, gradient);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      const uint64_t k = run.calls[0][0].stats.kTarget;
      const uint64_t capacity = sccl::syncFreeCapacity(k, nranks, slack, count);
      const double used_slack = slack < 0 ? sccl::kSyncFreeDefaultSlack : slack;
      CHECK(capacity == uint64_t(std::ceil(double(k) / nranks * (1 + used_slack))));
      // All-gather of (4 + capacity) int64 words, all-reduce of n * capacity floats.
      const uint64_t slot = (4 + capacity) * 8, values = uint64_t(nranks) * capacity * 4;
      const uint64_t reduce = values * 2 * uint64_t(nranks - 1) / uint64_t(nranks);
      const uint64_t want_sent = nranks == 1 ? 0 : slot + reduce;
      const uint64_t want_received = nranks == 1 ? 0 : slot * uint64_t(nranks - 1) + reduce;
      bool capped = false;
      for (size_t t = 0; t < 8; ++t) {
        for (int r = 0; r < nranks; ++r) {
          INFO("n=" << nranks << " slack=" << slack << " call " << t << " rank " << r);
          const RankIteration& call = run.calls[t][r];
          for (uint64_t c : call.counts) CHECK(c <= capacity);
          capped = capped || call.counts[r] == capacity;
          CHECK(call.stats.bytesSent == want_sent);
          CHECK(call.stats.bytesReceived == want_received);
        }
      }
      if (nranks > 1) CHECK(capped);  // the skew did push some rank to the cap
    }
  }
}

TEST_CASE("sync free caps its capacity at the vector size for a huge or infinite slack",
          "[sparse][sync_free]") {
  const size_t count = 1000;
  CHECK(sccl::syncFreeCapacity(10, 2, INFINITY, count) == count);
  CHECK(sccl::syncFreeCapacity(10, 2, 1e300, count) == count);
  CHECK(sccl::syncFreeCapacity(10, 2, 0.0, count) == 5);
  CHECK(sccl::syncFreeCapacity(0, 4, 0.0, count) == 1);
  // The whole call runs with the infinite slack: a slot of count indices per rank, and every
  // output equals the gather reduction with the same (uncapped) selection.
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    scclSparseConfig_t config = sparseConfig(preset, 0.05);
    config.maxDensitySlack = INFINITY;
    GradientFn gradient = skewedGradient(29, count);
    SparseRun run = runSparse(3, count, config, 3, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    SparseRun want = runSparse(3, count, gatherTwin(preset, 0.05, INFINITY), 3, gradient);
    REQUIRE_NO_RANK_FAILURES(want.failures);
    for (size_t t = 0; t < run.calls.size(); ++t) {
      for (size_t r = 0; r < 3; ++r) {
        INFO(preset << " call " << t << " rank " << r);
        REQUIRE(run.calls[t][r].result == scclSuccess);
        CHECK(std::memcmp(run.calls[t][r].output.data(), want.calls[t][r].output.data(),
                          count * 4) == 0);
      }
    }
  }
}

TEST_CASE("sync free refuses search spaces and corrections that need a count exchange",
          "[sparse][sync_free]") {
  struct Bad {
    const char* search;
    const char* correction;
    const char* message;
  };
  for (const Bad& bad : {Bad{"whole", nullptr, "exclusive search space"},
                         Bad{"leader", nullptr, "exclusive search space"},
                         Bad{nullptr, "histogram", "densityCorrection"}}) {
    scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
    config.searchSpace = bad.search;
    config.densityCorrection = bad.correction;
    std::string message;
    scclResult_t result = scclSuccess;
    auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog&) {
      scclSparsifier_t sp = nullptr;
      scclResult_t got = scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &config);
      if (rank == 0) {
        result = got;
        message = scclGetLastError(nullptr);
      }
      if (got == scclSuccess) scclSparsifierDestroy(sp);
    });
    REQUIRE_NO_RANK_FAILURES(failures);
    INFO(message);
    CHECK(result == scclInvalidArgument);
    CHECK(message.find(bad.message) != std::string::npos);
  }
  SECTION("the reduction axis can be named on its own") {
    scclSparseConfig_t config = sparseConfig("exdyna", 0.01);
    config.reduction = "sync_free";
    config.densityCorrection = "none";
    SparseRun run = runSparse(2, 3000, config, 3, skewedGradient(29, 3000));
    REQUIRE_NO_RANK_FAILURES(run.failures);
  }
}
