// scclSparseAllreduce and the sparsifier calls with bad input: documented codes, messages, no
// side effects, and the communicator and sparsifier keep working. Non-finite gradient policies.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "support/sparse_runs.h"
#include "support/typed_values.h"

using namespace sccl_test;

TEST_CASE("sparsifier creation rejects bad input", "[sparse][errors]") {
  auto failures = runLocalRanks(2, [&](int, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
    scclSparseConfig_t zero_density = config;
    zero_density.density = 0;
    scclSparseConfig_t big_density = config;
    big_density.density = 1.01;
    scclSparseConfig_t unknown = config;
    unknown.algorithm = "fastest";
    scclSparseConfig_t no_magic = config;
    no_magic.magic = 1;
    struct Case {
      const char* name;
      scclResult_t result;
    };
    const Case cases[] = {
        {"null output", scclSparsifierCreate(nullptr, comm, 10, scclFloat32, &config)},
        {"null comm", scclSparsifierCreate(&sp, nullptr, 10, scclFloat32, &config)},
        {"null config", scclSparsifierCreate(&sp, comm, 10, scclFloat32, nullptr)},
        {"int32 dtype", scclSparsifierCreate(&sp, comm, 10, scclInt32, &config)},
        {"dtype 77", scclSparsifierCreate(&sp, comm, 10, rawEnum<scclDataType_t>(77), &config)},
        {"density 0", scclSparsifierCreate(&sp, comm, 10, scclFloat32, &zero_density)},
        {"density > 1", scclSparsifierCreate(&sp, comm, 10, scclFloat32, &big_density)},
        {"unknown algorithm", scclSparsifierCreate(&sp, comm, 10, scclFloat32, &unknown)},
        {"no magic", scclSparsifierCreate(&sp, comm, 10, scclFloat32, &no_magic)},
        {"huge count", scclSparsifierCreate(&sp, comm, SIZE_MAX, scclFloat32, &config)},
    };
    for (const Case& c : cases) log.checkResult(c.result, scclInvalidArgument, c.name);
    log.check(sp == nullptr, "no sparsifier was returned");
    float one = 1, sum = 0;
    log.checkResult(scclAllReduce(&one, &sum, 1, scclFloat32, scclSum, comm, nullptr), scclSuccess,
                    "communicator still works");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("ranks with different sparse configs fail together", "[sparse][errors]") {
  auto failures = runLocalRanks(3, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
    if (rank == 2) config.density = 0.02;
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 100, scclFloat32, &config), scclInvalidUsage,
                    "mismatched density");
    size_t count = rank == 1 ? 101 : 100;
    config.density = 0.01;
    log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclInvalidUsage,
                    "mismatched count");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("sparse all-reduce rejects bad calls and keeps working", "[sparse][errors]") {
  auto failures = runLocalRanks(2, [&](int, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, 64, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    std::vector<float> grad(64, 0.5f), out(64);
    int stream = 0;
    struct Case {
      const char* name;
      scclResult_t result;
    };
    const Case cases[] = {
        {"count mismatch",
         scclSparseAllreduce(grad.data(), out.data(), 63, scclFloat32, scclSum, sp, comm, nullptr)},
        {"dtype mismatch",
         scclSparseAllreduce(grad.data(), out.data(), 64, scclFloat16, scclSum, sp, comm, nullptr)},
        {"bad op", scclSparseAllreduce(grad.data(), out.data(), 64, scclFloat32,
                                       rawEnum<scclRedOp_t>(9), sp, comm, nullptr)},
        {"null sendbuf",
         scclSparseAllreduce(nullptr, out.data(), 64, scclFloat32, scclSum, sp, comm, nullptr)},
        {"null recvbuf",
         scclSparseAllreduce(grad.data(), nullptr, 64, scclFloat32, scclSum, sp, comm, nullptr)},
        {"null sparsifier", scclSparseAllreduce(grad.data(), out.data(), 64, scclFloat32, scclSum,
                                                nullptr, comm, nullptr)},
        {"null comm", scclSparseAllreduce(grad.data(), out.data(), 64, scclFloat32, scclSum, sp,
                                          nullptr, nullptr)},
        {"stream on host",
         scclSparseAllreduce(grad.data(), out.data(), 64, scclFloat32, scclSum, sp, comm, &stream)},
        {"stats null", scclSparsifierGetStats(sp, nullptr)},
        {"counts wrong n", scclSparsifierGetRankCounts(sp, nullptr, 2)},
    };
    for (const Case& c : cases) log.checkResult(c.result, scclInvalidArgument, c.name);
    log.check(std::strlen(scclGetLastError(comm)) > 0, "message on the communicator");
    log.checkResult(
        scclSparseAllreduce(grad.data(), out.data(), 64, scclFloat32, scclSum, sp, comm, nullptr),
        scclSuccess, "a good call after the bad ones");
    scclSparseStats_t stats{};
    stats.size = sizeof(stats);
    scclSparsifierGetStats(sp, &stats);
    log.check(stats.iteration == 1, "rejected calls did not advance the sparsifier");
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
    log.checkResult(scclSparsifierDestroy(sp), scclInvalidArgument, "double destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("a sparsifier from another communicator is rejected", "[sparse][errors]") {
  scclUniqueId id_a, id_b;
  REQUIRE(scclGetUniqueId(&id_a) == scclSuccess);
  REQUIRE(scclGetUniqueId(&id_b) == scclSuccess);
  scclComm_t a = nullptr, b = nullptr;
  REQUIRE(scclCommInitRank(&a, 1, id_a, 0) == scclSuccess);
  REQUIRE(scclCommInitRank(&b, 1, id_b, 0) == scclSuccess);
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  scclSparsifier_t sp = nullptr;
  REQUIRE(scclSparsifierCreate(&sp, a, 16, scclFloat32, &config) == scclSuccess);
  std::vector<float> grad(16, 1.0f), out(16);
  CHECK(scclSparseAllreduce(grad.data(), out.data(), 16, scclFloat32, scclSum, sp, b, nullptr) ==
        scclInvalidArgument);
  CHECK(std::string(scclGetLastError(b)).find("communicator") != std::string::npos);
  CHECK(scclSparseAllreduce(grad.data(), out.data(), 16, scclFloat32, scclSum, sp, a, nullptr) ==
        scclSuccess);
  CHECK(scclSparsifierDestroy(sp) == scclSuccess);
  CHECK(scclCommDestroy(a) == scclSuccess);
  CHECK(scclCommDestroy(b) == scclSuccess);
}

TEST_CASE("NaN in one rank's gradient is propagated and the residual kept clean",
          "[sparse][nonfinite]") {
  const size_t count = 2000;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    if (t == 2 && r == 1 && i == 1234) return std::numeric_limits<float>::quiet_NaN();
    return gradientValue(9, r, t, i);
  };
  for (const char* algorithm : {"micro", "exdyna", "topk", "cltk", "hard_threshold"}) {
    SparseRun run = runSparse(3, count, sparseConfig(algorithm, 0.01), 4, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    INFO(algorithm);
    for (int r = 0; r < 3; ++r) {
      const RankIteration& bad = run.calls[2][r];
      CHECK(bad.result == scclSuccess);
      size_t nan_outputs = 0;
      for (float v : bad.output) nan_outputs += std::isnan(v);
      CHECK(nan_outputs == count);
      // The residual is the one from before the NaN step, and stays finite afterwards.
      CHECK(std::memcmp(bad.residual.data(), run.calls[1][r].residual.data(), count * 4) == 0);
      for (float v : run.calls[3][r].residual) REQUIRE(std::isfinite(v));
      for (float v : run.calls[3][r].output) REQUIRE(std::isfinite(v));
      // The discarded step did not count, except where the leader rotates with the call
      // number (CLT-k: it moves on, so that the leader never depends on the data).
      const bool leader_rotates = std::strcmp(algorithm, "cltk") == 0;
      CHECK(run.calls[3][r].stats.iteration == (leader_rotates ? 4u : 3u));
    }
  }
}

TEST_CASE("NaN with the error policy fails every rank and changes nothing", "[sparse][nonfinite]") {
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    if (t == 1 && r == 0 && i == 7) return std::numeric_limits<float>::infinity();
    return gradientValue(4, r, t, i);
  };
  auto config = sparseConfig("micro", 0.05);
  config.nonFinite = scclNonFiniteError;
  SparseRun run = runSparse(2, 500, config, 3, gradient);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  for (int r = 0; r < 2; ++r) {
    CHECK(run.calls[1][r].result == scclInvalidArgument);
    CHECK(std::memcmp(run.calls[1][r].residual.data(), run.calls[0][r].residual.data(), 2000) == 0);
    CHECK(run.calls[2][r].result == scclSuccess);
  }
}
