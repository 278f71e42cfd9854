// scclSparseAllreduce over in-process ranks: every algorithm against the straightforward model
// in support/sparse_reference.h, bitwise, on every rank; residuals; conservation; disjointness.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "partition/search_space.h"
#include "support/sparse_reference.h"
#include "support/sparse_runs.h"

using namespace sccl_test;

namespace {

// Compares a run with the reference model, call by call; returns the number of mismatches.
void checkAgainstReference(const std::string& algorithm, int nranks, size_t count,
                           const SparseRun& run, const GradientFn& gradient) {
  const scclSparseStats_t& first = run.calls[0][0].stats;
  GatherReference reference(presetSearchSpace(algorithm, count, nranks), nranks, count,
                            algorithm == "topk" || algorithm == "cltk", first.kTarget);
  for (size_t t = 0; t < run.calls.size(); ++t) {
    std::vector<std::vector<float>> grads(static_cast<size_t>(nranks), std::vector<float>(count));
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) grads[r][i] = gradient(r, t, i);
    const auto& ranks = run.calls[t];
    double threshold = ranks[0].stats.threshold;
    ReferenceCall expected = reference.step(grads, threshold, t);
    INFO(algorithm << " n=" << nranks << " count=" << count << " call " << t);
    for (int r = 0; r < nranks; ++r) {
      INFO("rank " << r);
      REQUIRE(ranks[r].result == scclSuccess);
      if (algorithm != "topk" && algorithm != "cltk") CHECK(ranks[r].stats.threshold == threshold);
      CHECK(ranks[r].counts == expected.counts);
      CHECK(ranks[r].stats.kGlobal == expected.global.size());
      CHECK(std::memcmp(ranks[r].output.data(), expected.output.data(), count * 4) == 0);
      CHECK(std::memcmp(ranks[r].residual.data(), reference.residual(r).data(), count * 4) == 0);
    }
  }
}

}  // namespace

TEST_CASE("sparse all-reduce matches the reference model for every gather algorithm",
          "[sparse][reference]") {
  for (const char* algorithm : {"topk", "cltk", "hard_threshold", "micro", "exdyna"}) {
    for (int nranks : {1, 2, 3, 4, 8}) {
      for (size_t count : {size_t(1), size_t(5), size_t(1000), size_t(4099)}) {
        GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(7, r, t, i); };
        auto config = sparseConfig(algorithm, 0.05);
        SparseRun run = runSparse(nranks, count, config, 6, gradient);
        REQUIRE_NO_RANK_FAILURES(run.failures);
        checkAgainstReference(algorithm, nranks, count, run, gradient);
      }
    }
  }
}

TEST_CASE("dense is the rank-order sum and average of the gradients", "[sparse][dense]") {
  GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(3, r, t, i); };
  for (scclRedOp_t op : {scclSum, scclAvg}) {
    SparseRun run = runSparse(3, 777, sparseConfig("dense", 0.01), 2, gradient, op, true);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t t = 0; t < 2; ++t) {
      for (size_t i = 0; i < 777; ++i) {
        float sum = (gradient(0, t, i) + gradient(1, t, i)) + gradient(2, t, i);
        float want = op == scclAvg ? sum / 3.0f : sum;
        for (int r = 0; r < 3; ++r) REQUIRE(run.calls[t][r].output[i] == want);
      }
    }
  }
}

TEST_CASE("exclusive partitions select disjoint sets and the average divides the sum",
          "[sparse][partition]") {
  GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(11, r, t, i); };
  for (const char* algorithm : {"micro", "exdyna"}) {
    SparseRun sum_run = runSparse(4, 10007, sparseConfig(algorithm, 0.01), 5, gradient, scclSum);
    SparseRun avg_run = runSparse(4, 10007, sparseConfig(algorithm, 0.01), 5, gradient, scclAvg);
    REQUIRE_NO_RANK_FAILURES(sum_run.failures);
    REQUIRE_NO_RANK_FAILURES(avg_run.failures);
    for (size_t t = 0; t < 5; ++t) {
      const RankIteration& call = sum_run.calls[t][0];
      uint64_t total = 0;
      for (uint64_t k : call.counts) total += k;
      INFO(algorithm << " call " << t);
      CHECK(total == call.stats.kGlobal);  // disjoint: no index chosen twice
      for (size_t i = 0; i < 10007; ++i) {
        REQUIRE(avg_run.calls[t][2].output[i] == sum_run.calls[t][2].output[i] / 4.0f);
      }
    }
  }
}

TEST_CASE("nothing is lost: contributions plus the final residual equal the gradients",
          "[sparse][conservation]") {
  const int nranks = 3, iterations = 20;
  const size_t count = 3001;
  GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(5, r, t, i); };
  for (const char* algorithm : {"topk", "cltk", "hard_threshold", "micro", "exdyna"}) {
    SparseRun run = runSparse(nranks, count, sparseConfig(algorithm, 0.02), iterations, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (int r = 0; r < nranks; ++r) {
      // Rank r's contribution at call t is acc = previous residual + gradient wherever the
      // residual was zeroed; so sum of gradients = sum of contributions + final residual. In
      // float, each residual update rounds once: the bound is iterations * eps * sum |g|.
      std::vector<double> gradients(count, 0.0), contributed(count, 0.0), magnitude(count, 0.0);
      std::vector<float> previous(count, 0.0f);
      for (int t = 0; t < iterations; ++t) {
        const RankIteration& call = run.calls[size_t(t)][size_t(r)];
        for (size_t i = 0; i < count; ++i) {
          float g = gradient(r, uint64_t(t), i);
          gradients[i] += g;
          magnitude[i] += std::fabs(g);
          if (call.residual[i] == 0.0f) contributed[i] += double(previous[i] + g);
          previous[i] = call.residual[i];
        }
      }
      size_t violations = 0;
      for (size_t i = 0; i < count; ++i) {
        double bound = iterations * 1.2e-7 * magnitude[i] + 1e-12;
        violations += std::fabs(gradients[i] - (contributed[i] + previous[i])) > bound;
      }
      INFO(algorithm << " rank " << r);
      CHECK(violations == 0);
    }
  }
}
