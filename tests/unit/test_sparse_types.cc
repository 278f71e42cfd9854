// scclSparseAllreduce beyond float32 and beyond the defaults: float16 and bfloat16 gradients
// (float32 residual: the sum is taken in float32 and rounded once to the gradient type) and
// float64 (float64 residual and sum) against the reference model bitwise on every rank, in place
// and averaged; max_density_slack = 0 caps every rank at ceil(k/n) entries, the largest;
// error_feedback = false keeps no residual; scclSparsifierReset returns to the initial state.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/shared/half.h"
#include "partition/search_space.h"
#include "support/sparse_reference.h"
#include "support/sparse_runs.h"
#include "support/typed_sparse_runs.h"

using namespace sccl_test;

namespace {

// A double that float32 cannot hold (for float64 gradients) with Laplace-like magnitudes around
// 0.01; float16 and bfloat16 round it (small ones to float16 subnormals).
double typedGradient(uint32_t seed, int rank, uint64_t t, size_t i) {
  return double(gradientValue(seed, rank, t, i)) +
         1e-10 * double(gradientValue(seed + 1, rank, t, i));
}

// Compares a typed run with the model call by call: outputs bitwise, counts, k', residuals.
void checkTypedRun(const std::string& algorithm, scclDataType_t dtype, int nranks, size_t count,
                   scclRedOp_t op, const TypedSparseRun& run, const TypedGradientFn& gradient) {
  const bool topk = algorithm == "topk";
  const uint64_t k = run.calls[0][0].stats.kTarget;
  const size_t element = sccl::dataTypeSize(dtype);
  // Half types: the float32 model of sparse_reference.h on the widened gradients; float64: the
  // same model on doubles.
  GatherReference reference32(presetSearchSpace(algorithm, count, nranks), nranks, count, topk, k);
  BasicGatherReference<double> reference64(presetSearchSpace(algorithm, count, nranks), nranks,
                                           count, topk, k);
  for (size_t t = 0; t < run.calls.size(); ++t) {
    const auto& ranks = run.calls[t];
    INFO(algorithm << " " << sccl::dataTypeName(dtype) << " n=" << nranks << " count=" << count
                   << (op == scclAvg ? " avg" : " sum") << " call " << t);
    for (int r = 0; r < nranks; ++r) REQUIRE(ranks[r].result == scclSuccess);
    const double threshold = ranks[0].stats.threshold;
    std::vector<unsigned char> want(count * element);
    std::vector<uint64_t> counts;
    size_t global = 0;
    std::vector<std::vector<double>> residuals(static_cast<size_t>(nranks));
    if (dtype == scclFloat64) {
      std::vector<std::vector<double>> grads(static_cast<size_t>(nranks),
                                             std::vector<double>(count));
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i) grads[r][i] = gradient(r, t, i);
      BasicReferenceCall<double> expected = reference64.step(grads, threshold, t);
      for (size_t i = 0; i < count; ++i) {
        double v = expected.output[i];
        if (op == scclAvg) v /= double(nranks);
        storeValue(dtype, want.data(), i, v);
      }
      counts = expected.counts;
      global = expected.global.size();
      for (int r = 0; r < nranks; ++r) residuals[r] = reference64.residual(r);
    } else {
      std::vector<std::vector<float>> grads(static_cast<size_t>(nranks), std::vector<float>(count));
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i)
          grads[r][i] = float(roundedGradient(dtype, gradient(r, t, i)));  // exact widening
      ReferenceCall expected = reference32.step(grads, threshold, t);
      for (size_t i = 0; i < count; ++i) {
        float v = expected.output[i];
        if (op == scclAvg) v /= float(nranks);
        // One rounding, float32 -> gradient type.
        uint16_t bits = dtype == scclFloat16 ? sccl::floatToFp16(v) : sccl::floatToBf16(v);
        std::memcpy(&want[i * 2], &bits, 2);
      }
      counts = expected.counts;
      global = expected.global.size();
      for (int r = 0; r < nranks; ++r)
        residuals[r].assign(reference32.residual(r).begin(), reference32.residual(r).end());
    }
    for (int r = 0; r < nranks; ++r) {
      INFO("rank " << r);
      if (!topk) CHECK(ranks[r].stats.threshold == threshold);
      CHECK(ranks[r].counts == counts);
      CHECK(ranks[r].stats.kGlobal == global);
      CHECK(std::memcmp(ranks[r].output.data(), want.data(), want.size()) == 0);
      CHECK(ranks[r].residual == residuals[r]);
    }
  }
}

}  // namespace

TEST_CASE("float16 bfloat16 and float64 gradients match the reference bitwise", "[sparse][types]") {
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    for (const char* algorithm : {"micro", "topk"}) {
      for (int nranks : {1, 3, 4}) {
        for (size_t count : {size_t(3), size_t(2053)}) {
          TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
            return typedGradient(21, r, t, i);
          };
          auto config = sparseConfig(algorithm, 0.05);
          TypedSparseRun run = runTypedSparse(nranks, count, dtype, config, 5, gradient);
          REQUIRE_NO_RANK_FAILURES(run.failures);
          checkTypedRun(algorithm, dtype, nranks, count, scclSum, run, gradient);
        }
      }
    }
  }
}

TEST_CASE("typed gradients in place and averaged match the reference bitwise", "[sparse][types]") {
  const size_t count = 1031;
  TypedGradientFn gradient = [](int r, uint64_t t, size_t i) { return typedGradient(22, r, t, i); };
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64, scclFloat32}) {
    for (const char* algorithm : {"micro", "topk"}) {
      for (int nranks : {3, 4}) {
        for (scclRedOp_t op : {scclSum, scclAvg}) {
          auto config = sparseConfig(algorithm, 0.05);
          TypedSparseRun in_place =
              runTypedSparse(nranks, count, dtype, config, 4, gradient, op, true);
          TypedSparseRun separate =
              runTypedSparse(nranks, count, dtype, config, 4, gradient, op, false);
          REQUIRE_NO_RANK_FAILURES(in_place.failures);
          REQUIRE_NO_RANK_FAILURES(separate.failures);
          INFO(algorithm << " " << sccl::dataTypeName(dtype) << " n=" << nranks
                         << (op == scclAvg ? " avg" : " sum"));
          for (size_t t = 0; t < 4; ++t)
            for (int r = 0; r < nranks; ++r)
              CHECK(in_place.calls[t][r].output == separate.calls[t][r].output);
          if (dtype != scclFloat32)
            checkTypedRun(algorithm, dtype, nranks, count, op, in_place, gradient);
        }
      }
    }
  }
}

TEST_CASE("max density slack 0 caps every rank at ceil of k over n with the largest entries",
          "[sparse][slack]") {
  const int nranks = 4, iterations = 6;
  const size_t count = 4000;
  // The first 20 % of the vector has 10x the scale: MiCRO's first partition holds far more than
  // k/n entries above the threshold.
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    return gradientValue(31, r, t, i) * (i < count / 5 ? 10.0f : 1.0f);
  };
  SECTION("micro") {
    auto config = sparseConfig("micro", 0.05);
    config.maxDensitySlack = 0.0;
    SparseRun run = runSparse(nranks, count, config, iterations, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    const uint64_t k = run.calls[0][0].stats.kTarget;
    const uint64_t cap = (k + nranks - 1) / nranks;
    auto search = presetSearchSpace("micro", count, nranks);
    bool capped = false;
    std::vector<std::vector<float>> previous(nranks, std::vector<float>(count, 0.0f));
    for (size_t t = 0; t < size_t(iterations); ++t) {
      for (int r = 0; r < nranks; ++r) {
        INFO("call " << t << " rank " << r);
        const RankIteration& call = run.calls[t][r];
        REQUIRE(call.result == scclSuccess);
        for (uint64_t c : call.counts) CHECK(c <= cap);
        capped = capped || call.counts[r] == cap;
        // Rank r's selection: its range's indices that its residual lost (acc is never 0 here).
        const sccl::IndexRange range = search->rangeFor(r, t);
        float smallest_kept = INFINITY, largest_left = 0;
        uint64_t kept = 0;
        for (size_t i = range.begin; i < range.end; ++i) {
          const float acc = std::fabs(previous[r][i] + gradient(r, t, i));
          REQUIRE(acc != 0.0f);
          if (call.residual[i] == 0.0f) {
            ++kept;
            smallest_kept = std::min(smallest_kept, acc);
          } else {
            largest_left = std::max(largest_left, acc);
          }
        }
        CHECK(kept == call.counts[r]);
        if (kept > 0) CHECK(smallest_kept >= largest_left);
        previous[r] = call.residual;
      }
    }
    CHECK(capped);  // the skew did push some rank to the cap
  }
  SECTION("topk") {
    // Each rank's top-k trimmed to its ceil(k/n) largest: the model's exact top-ceil(k/n).
    auto config = sparseConfig("topk", 0.05);
    config.maxDensitySlack = 0.0;
    SparseRun run = runSparse(nranks, count, config, iterations, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    const uint64_t k = run.calls[0][0].stats.kTarget;
    const uint64_t cap = (k + nranks - 1) / nranks;
    GatherReference reference(presetSearchSpace("topk", count, nranks), nranks, count, true, cap);
    for (size_t t = 0; t < size_t(iterations); ++t) {
      std::vector<std::vector<float>> grads(nranks, std::vector<float>(count));
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i) grads[r][i] = gradient(r, t, i);
      ReferenceCall expected = reference.step(grads, 0.0, t);
      for (int r = 0; r < nranks; ++r) {
        INFO("call " << t << " rank " << r);
        const RankIteration& call = run.calls[t][r];
        REQUIRE(call.result == scclSuccess);
        for (uint64_t c : call.counts) CHECK(c == cap);
        CHECK(std::memcmp(call.output.data(), expected.output.data(), count * 4) == 0);
        CHECK(std::memcmp(call.residual.data(), reference.residual(r).data(), count * 4) == 0);
      }
    }
  }
}

TEST_CASE("error feedback off keeps the residual zero and forgets unsent values",
          "[sparse][feedback]") {
  const int nranks = 3, iterations = 5;
  const size_t count = 3001;
  GradientFn gradient = [](int r, uint64_t t, size_t i) { return gradientValue(41, r, t, i); };
  for (const char* algorithm : {"micro", "topk"}) {
    auto config = sparseConfig(algorithm, 0.02);
    config.errorFeedback = 0;
    SparseRun run = runSparse(nranks, count, config, iterations, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t t = 0; t < size_t(iterations); ++t) {
      // Every call is a first call on the gradient alone (MiCRO's partitions depend only on t).
      GatherReference fresh(presetSearchSpace(algorithm, count, nranks), nranks, count,
                            std::string(algorithm) == "topk", run.calls[0][0].stats.kTarget);
      std::vector<std::vector<float>> grads(nranks, std::vector<float>(count));
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i) grads[r][i] = gradient(r, t, i);
      ReferenceCall expected = fresh.step(grads, run.calls[t][0].stats.threshold, t);
      for (int r = 0; r < nranks; ++r) {
        INFO(algorithm << " call " << t << " rank " << r);
        const RankIteration& call = run.calls[t][r];
        REQUIRE(call.result == scclSuccess);
        CHECK(std::all_of(call.residual.begin(), call.residual.end(),
                          [](float v) { return v == 0.0f; }));
        CHECK(call.stats.residualNorm == 0.0);
        CHECK(call.counts == expected.counts);
        CHECK(std::memcmp(call.output.data(), expected.output.data(), count * 4) == 0);
      }
    }
  }
}

TEST_CASE("a reset sparsifier behaves as a fresh one bitwise", "[sparse][reset]") {
  const int nranks = 4, warmup = 40;
  const size_t count = 65536;
  // Skewed, so that ExDyna moves blocks and the scaling threshold moves before the reset.
  auto gradient = [](int r, uint64_t t, size_t i) {
    return gradientValue(51, r, t, i) * (i < count / 5 ? 10.0f : 1.0f);
  };
  for (scclDataType_t dtype : {scclFloat32, scclBfloat16}) {
    struct Record {
      std::vector<unsigned char> output, residual;
      std::vector<uint64_t> counts;
      scclSparseStats_t stats{};
      std::vector<sccl::IndexRange> partitions;
    };
    std::vector<Record> reset_records(nranks), fresh_records(nranks);
    std::vector<int> moved(nranks, 0), threshold_moved(nranks, 0);
    auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
      auto config = sparseConfig("exdyna", 0.01);
      const size_t element = sccl::dataTypeSize(dtype);
      std::vector<unsigned char> grad(count * element), out(count * element);
      auto fill = [&](uint64_t t) {
        for (size_t i = 0; i < count; ++i) storeValue(dtype, grad.data(), i, gradient(rank, t, i));
      };
      auto record = [&](scclSparsifier_t sp, Record& into) {
        into.output = out;
        const auto* residual = static_cast<const unsigned char*>(sp->residual.data());
        into.residual.assign(residual, residual + sp->residual.size());
        into.counts.resize(nranks);
        log.checkResult(scclSparsifierGetRankCounts(sp, into.counts.data(), nranks), scclSuccess,
                        "counts");
        into.stats.size = sizeof(scclSparseStats_t);
        log.checkResult(scclSparsifierGetStats(sp, &into.stats), scclSuccess, "stats");
        into.partitions.clear();
        for (size_t p = 0; p < sp->search->partitionCount(); ++p)
          into.partitions.push_back(sp->search->partition(p));
      };
      scclSparsifier_t used = nullptr, fresh = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&used, comm, count, dtype, &config), scclSuccess,
                           "create"))
        return;
      std::vector<sccl::IndexRange> initial;
      for (size_t p = 0; p < used->search->partitionCount(); ++p)
        initial.push_back(used->search->partition(p));
      const double initial_threshold = used->estimator->currentThreshold();
      for (int t = 0; t < warmup; ++t) {
        fill(uint64_t(t));
        log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, dtype, scclSum, used,
                                            comm, nullptr),
                        scclSuccess, "warm-up call");
      }
      for (size_t p = 0; p < initial.size(); ++p)
        moved[rank] += !(used->search->partition(p) == initial[p]);
      threshold_moved[rank] = used->estimator->currentThreshold() != initial_threshold;
      log.checkResult(scclSparsifierReset(used), scclSuccess, "reset");
      if (!log.checkResult(scclSparsifierCreate(&fresh, comm, count, dtype, &config), scclSuccess,
                           "create fresh"))
        return;
      // The same gradients into both, twice (the second call shows the state after one call).
      for (uint64_t t : {uint64_t(1000), uint64_t(1001)}) {
        fill(t);
        log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, dtype, scclSum, used,
                                            comm, nullptr),
                        scclSuccess, "call after reset");
        record(used, reset_records[rank]);
        fill(t);
        log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, dtype, scclSum, fresh,
                                            comm, nullptr),
                        scclSuccess, "fresh call");
        record(fresh, fresh_records[rank]);
        const Record& a = reset_records[rank];
        const Record& b = fresh_records[rank];
        const std::string when = "call " + std::to_string(t - 999) + " after reset: ";
        log.check(a.output == b.output, when + "output differs from a fresh sparsifier's");
        log.check(a.residual == b.residual, when + "residual differs");
        log.check(a.counts == b.counts, when + "rank counts differ");
        log.check(a.partitions == b.partitions, when + "partitions differ");
        log.check(a.stats.iteration == b.stats.iteration && a.stats.iteration == t - 999,
                  when + "iteration differs");
        log.check(a.stats.threshold == b.stats.threshold, when + "threshold differs");
        log.check(a.stats.kGlobal == b.stats.kGlobal && a.stats.kLocal == b.stats.kLocal,
                  when + "k differs");
        log.check(a.stats.totalBytesSent == b.stats.totalBytesSent &&
                      a.stats.totalBytesReceived == b.stats.totalBytesReceived,
                  when + "cumulative bytes differ");
        log.check(a.stats.meanAbsDensityError == b.stats.meanAbsDensityError,
                  when + "mean density error differs");
      }
      log.checkResult(scclSparsifierDestroy(used), scclSuccess, "destroy");
      log.checkResult(scclSparsifierDestroy(fresh), scclSuccess, "destroy fresh");
    });
    INFO(sccl::dataTypeName(dtype));
    REQUIRE_NO_RANK_FAILURES(failures);
    for (int r = 0; r < nranks; ++r) {
      CHECK(moved[r] > 0);             // the warm-up did change the partitions ...
      CHECK(threshold_moved[r] == 1);  // ... and the threshold, so the reset had work to do
    }
  }
}
