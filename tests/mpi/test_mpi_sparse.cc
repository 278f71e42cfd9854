// The sparse all-reduce over MPI on every rank of the job (mpiexec -n 1..4): a communicator from
// scclCommInitMpi, every algorithm on counts below the rank count, odd counts and larger ones,
// several calls each. Every rank can compute every rank's gradient from (seed, rank, call, index),
// so each rank runs the whole model of support/sparse_reference.h itself and checks its output,
// residual and rank counts bitwise; the outputs of all ranks are all-gathered and compared, as are
// the thresholds of the fixed and scaling estimators. A count that differs across ranks fails
// creation with scclInvalidUsage on every rank.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sparsifier/sparsifier.h"
#include "mpi_test_support.h"
#include "partition/search_space.h"
#include "sparsecoll/sparsecoll.h"
#include "support/sparse_reference.h"
#include "support/sparse_runs.h"

using namespace sccl_mpi_test;

namespace {

float gradient(int rank, uint64_t t, size_t i) {
  return sccl_test::gradientValue(61, rank, t, i);
}

// Runs `calls` calls of one algorithm and checks each against the model; op and in-place as given.
void checkAlgorithm(scclComm_t comm, const std::string& algorithm, size_t count, int calls,
                    scclRedOp_t op, bool in_place) {
  const int rank = worldRank(), nranks = worldSize();
  const bool dense = algorithm == "dense";
  const bool topk = algorithm == "topk" || algorithm == "cltk";
  const bool same_threshold =
      algorithm == "hard_threshold" || algorithm == "micro" || algorithm == "exdyna";
  scclSparseConfig_t config = sccl_test::sparseConfig(algorithm.c_str(), 0.05);
  scclSparsifier_t sp = nullptr;
  REQUIRE(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config) == scclSuccess);
  scclSparseStats_t stats{};
  stats.size = sizeof(stats);
  REQUIRE(scclSparsifierGetStats(sp, &stats) == scclSuccess);
  sccl_test::GatherReference reference(sccl_test::presetSearchSpace(algorithm, count, nranks),
                                       nranks, count, topk, stats.kTarget);
  std::vector<float> grad(count), out(count, -1.0f), all(count * size_t(nranks));
  std::vector<uint64_t> counts(static_cast<size_t>(nranks));
  std::vector<double> thresholds(static_cast<size_t>(nranks));
  for (int t = 0; t < calls; ++t) {
    INFO(algorithm << " count " << count << " call " << t << (op == scclAvg ? " avg" : " sum")
                   << (in_place ? " in place" : "") << " rank " << rank << " of " << nranks);
    for (size_t i = 0; i < count; ++i) grad[i] = gradient(rank, uint64_t(t), i);
    float* recv = in_place ? grad.data() : out.data();
    REQUIRE(scclSparseAllreduce(grad.data(), recv, count, scclFloat32, op, sp, comm, nullptr) ==
            scclSuccess);
    REQUIRE(scclSparsifierGetStats(sp, &stats) == scclSuccess);
    REQUIRE(scclSparsifierGetRankCounts(sp, counts.data(), nranks) == scclSuccess);

    // Bitwise the same output on every rank.
    REQUIRE(scclAllGather(recv, all.data(), count, scclFloat32, comm, nullptr) == scclSuccess);
    for (int r = 0; r < nranks; ++r) {
      INFO("output of rank " << r);
      CHECK(std::memcmp(&all[size_t(r) * count], recv, count * sizeof(float)) == 0);
    }
    REQUIRE(scclAllGather(&stats.threshold, thresholds.data(), 1, scclFloat64, comm, nullptr) ==
            scclSuccess);
    if (same_threshold)
      for (int r = 0; r < nranks; ++r) CHECK(thresholds[size_t(r)] == stats.threshold);

    // The model, fed every rank's gradient.
    std::vector<std::vector<float>> grads(static_cast<size_t>(nranks), std::vector<float>(count));
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) grads[size_t(r)][i] = gradient(r, uint64_t(t), i);
    std::vector<float> want(count);
    std::vector<uint64_t> want_counts;
    uint64_t want_global = 0;
    if (dense) {
      for (size_t i = 0; i < count; ++i) {
        float sum = grads[0][i];
        for (int r = 1; r < nranks; ++r) sum += grads[size_t(r)][i];
        want[i] = sum;
      }
      want_counts.assign(static_cast<size_t>(nranks), count);
      want_global = count;
    } else {
      sccl_test::ReferenceCall expected = reference.step(grads, stats.threshold, uint64_t(t));
      want = expected.output;
      want_counts = expected.counts;
      want_global = expected.global.size();
      const float* residual = static_cast<const float*>(sp->residual.data());
      CHECK(std::memcmp(residual, reference.residual(rank).data(), count * sizeof(float)) == 0);
    }
    if (op == scclAvg)
      for (float& v : want) v /= float(nranks);
    CHECK(std::memcmp(recv, want.data(), count * sizeof(float)) == 0);
    CHECK(counts == want_counts);
    CHECK(stats.kGlobal == want_global);
    CHECK(stats.kLocal == want_counts[size_t(rank)]);
    CHECK(stats.iteration == uint64_t(t + 1));
  }
  CHECK(scclSparsifierDestroy(sp) == scclSuccess);
}

const char* const kAlgorithms[] = {"dense", "topk", "cltk", "hard_threshold", "micro", "exdyna"};

}  // namespace

TEST_CASE("mpi sparse: every algorithm is bitwise the model and the same on every rank",
          "[mpi][sparse]") {
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  for (const char* algorithm : kAlgorithms) {
    for (size_t count : {size_t(1), size_t(3), size_t(1000), size_t(4099)}) {
      checkAlgorithm(comm, algorithm, count, 5, scclSum, false);
    }
  }
  CHECK(scclCommDestroy(comm) == scclSuccess);
}

TEST_CASE("mpi sparse: in place and averaged", "[mpi][sparse]") {
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  for (const char* algorithm : kAlgorithms) {
    checkAlgorithm(comm, algorithm, 1001, 4, scclAvg, true);
    checkAlgorithm(comm, algorithm, 1001, 2, scclSum, true);
  }
  CHECK(scclCommDestroy(comm) == scclSuccess);
}

TEST_CASE("mpi sparse: a count that differs across ranks fails creation on every rank",
          "[mpi][sparse][errors]") {
  if (worldSize() < 2) return;
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  for (const char* algorithm : kAlgorithms) {
    INFO(algorithm << " rank " << worldRank());
    scclSparseConfig_t config = sccl_test::sparseConfig(algorithm, 0.01);
    scclSparsifier_t sp = nullptr;
    const size_t count = worldRank() == 1 ? 1001 : 1000;
    CHECK(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config) == scclInvalidUsage);
    CHECK(sp == nullptr);
    CHECK(std::string(scclGetLastError(comm)).find("rank") != std::string::npos);
  }
  // The communicator is still usable, and a matching creation works.
  float one = 1.0f, sum = 0.0f;
  CHECK(scclAllReduce(&one, &sum, 1, scclFloat32, scclSum, comm, nullptr) == scclSuccess);
  CHECK(sum == float(worldSize()));
  scclSparseConfig_t config = sccl_test::sparseConfig("exdyna", 0.01);
  scclSparsifier_t sp = nullptr;
  CHECK(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &config) == scclSuccess);
  if (sp != nullptr) CHECK(scclSparsifierDestroy(sp) == scclSuccess);
  CHECK(scclCommDestroy(comm) == scclSuccess);
}
