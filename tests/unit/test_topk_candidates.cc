// Top-k on host buffers finds its k-th value among the accumulating pass's candidates (every
// entry at or above a quarter octave below the last call's k-th value) when they hold at least k
// and fit their room, and reads the range otherwise. Whichever way a call goes, its selection,
// output and residual must be the exact top-k's (ties to the lowest index), bit for bit: here
// against the independent model of support/sparse_reference.h, over calls chosen so that each
// way is taken (the first call; candidates that hold, with ties at the k-th value; a k-th value
// that falls by far more than a quarter octave; more candidates than their room).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "support/sparse_reference.h"
#include "support/sparse_runs.h"

namespace {

constexpr int kRanks = 3;
constexpr size_t kCount = 20011;
constexpr double kDensity = 0.005;

// The gradient of call t on `rank` at i.
float regime(int rank, uint64_t t, size_t i) {
  const float laplace = sccl_test::gradientValue(53, rank, t, i);
  switch (t) {
    case 1:  // a few hundred entries far above the rest: the next calls' k-th values are theirs
      return (i * 7919 + size_t(rank) * 31) % 61 == 0 ? 1000.0f + float(i % 13) : laplace;
    case 4:  // quantised: many entries tie at every level, the k-th value among them
      return float(int((i * 2654435761u + size_t(rank)) % 9) - 4) * 0.25f;
    case 6:  // nearly every entry above the last k-th value: the candidates overflow their room
      return (i % 2 == 0 ? 1.0f : -1.0f) * (50.0f + float(i % 3));
    default: return laplace;
  }
}

}  // namespace

TEST_CASE("top-k on host buffers from the pass's candidates equals the exact top-k bit for bit",
          "[sparse][topk]") {
  const int calls = 9;
  const scclSparseConfig_t config = sccl_test::sparseConfig("topk", kDensity);
  const uint64_t k = uint64_t(kDensity * double(kCount));
  sccl_test::SparseRun run = sccl_test::runSparse(kRanks, kCount, config, calls, regime);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  sccl_test::GatherReference reference(sccl_test::presetSearchSpace("topk", kCount, kRanks), kRanks,
                                       kCount, true, k);
  for (int t = 0; t < calls; ++t) {
    INFO("call " << t);
    std::vector<std::vector<float>> grads(kRanks, std::vector<float>(kCount));
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < kCount; ++i) grads[size_t(r)][i] = regime(r, uint64_t(t), i);
    const sccl_test::ReferenceCall expected = reference.step(grads, 0.0, uint64_t(t));
    for (int r = 0; r < kRanks; ++r) {
      INFO("rank " << r);
      const sccl_test::RankIteration& got = run.calls[size_t(t)][size_t(r)];
      REQUIRE(got.result == scclSuccess);
      CHECK(got.counts == expected.counts);
      CHECK(std::memcmp(got.output.data(), expected.output.data(), kCount * 4) == 0);
      CHECK(std::memcmp(got.residual.data(), reference.residual(r).data(), kCount * 4) == 0);
    }
  }
}
