// The sketch reduction (preset s2) over in-process ranks: bitwise against the model of
// support/sketch_reference.h on every rank (outputs, residuals, counts, the bitmap union),
// the all-reduce of sketches against the sketch of the sum, exact recovery without collisions,
// conservation with both error-feedback modes, averages, types, NaN and config errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/shared/count_sketch.h"
#include "support/sketch_reference.h"
#include "support/sparse_runs.h"
#include "support/typed_sparse_runs.h"

using namespace sccl_test;

namespace {

scclSparseConfig_t s2Config(double density, int block, const char* selection,
                            const char* feedback) {
  scclSparseConfig_t config = sparseConfig("s2", density);
  config.sketchBlockSize = block;
  config.sketchBlockSelection = selection;
  config.sketchFeedback = feedback;
  return config;
}

SketchModelConfig modelOf(const scclSparseConfig_t& config, size_t count) {
  SketchModelConfig m;
  m.count = count;
  m.block = size_t(config.sketchBlockSize);
  m.rows = uint32_t(config.sketchRows);
  m.lambda = config.sketchLambda;
  m.seed = uint64_t(config.sketchSeed);
  m.k = std::max<uint64_t>(1, uint64_t(std::floor(config.density * double(count))));
  m.nonzero = std::strcmp(config.sketchBlockSelection, "nonzero") == 0;
  m.decode_error = std::strcmp(config.sketchFeedback, "decode_error") == 0;
  m.error_feedback = config.errorFeedback == 1;
  return m;
}

// Embedding-like gradients: each rank touches about a third of the rows (blocks of `row`
// elements), with overlap; values Laplace (seeded) or small integers.
GradientFn rowGradient(uint32_t seed, size_t row, bool integer) {
  return [=](int r, uint64_t t, size_t i) {
    const uint64_t touch =
        sccl::sketchMix(uint64_t(seed) << 32 ^ uint64_t(r) << 48 ^ t << 40 ^ uint64_t(i / row));
    if (touch % 3 != 0) return 0.0f;
    if (integer) return float(testValue(seed, r * 1000 + int(t), i));
    return gradientValue(seed, r, t, i);
  };
}

void checkAgainstModel(const scclSparseConfig_t& config, int nranks, size_t count, int calls,
                       const GradientFn& gradient, scclRedOp_t op = scclSum) {
  SparseRun run = runSparse(nranks, count, config, calls, gradient, op);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  SketchReference<float> model(modelOf(config, count), nranks);
  for (int t = 0; t < calls; ++t) {
    std::vector<std::vector<float>> grads(static_cast<size_t>(nranks), std::vector<float>(count));
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) grads[size_t(r)][i] = gradient(r, uint64_t(t), i);
    SketchModelCall<float> want = model.step(grads, op == scclAvg);
    for (int r = 0; r < nranks; ++r) {
      const RankIteration& got = run.calls[size_t(t)][size_t(r)];
      INFO(config.sketchBlockSelection << " " << config.sketchFeedback << " block "
                                       << config.sketchBlockSize << " n=" << nranks
                                       << " count=" << count << " call " << t << " rank " << r);
      REQUIRE(got.result == scclSuccess);
      CHECK(got.counts == want.counts);
      CHECK(got.stats.kGlobal == want.k_global);
      CHECK(std::memcmp(got.output.data(), want.output.data(), count * 4) == 0);
      CHECK(std::memcmp(got.residual.data(), model.residual(r).data(), count * 4) == 0);
      // Outside the union of marked blocks the output is exactly zero.
      for (size_t i = 0; i < count; ++i) {
        if (!want.united[i / size_t(config.sketchBlockSize)]) REQUIRE(got.output[i] == 0.0f);
      }
    }
  }
}

}  // namespace

TEST_CASE("s2 matches the sketch model bitwise on every rank", "[sketch][reference]") {
  for (const char* selection : {"topk", "nonzero"}) {
    for (const char* feedback : {"unselected", "decode_error"}) {
      for (int nranks : {1, 2, 3, 4, 8}) {
        for (size_t count : {size_t(1), size_t(5), size_t(1000), size_t(4099)}) {
          for (int block : {7, 32}) {
            checkAgainstModel(s2Config(0.05, block, selection, feedback), nranks, count, 4,
                              rowGradient(3, size_t(block), false));
          }
        }
      }
    }
  }
}

TEST_CASE("s2 with one sketch row an even row count and average matches the model",
          "[sketch][reference]") {
  for (int rows : {1, 2, 4}) {
    scclSparseConfig_t config = s2Config(0.02, 16, "topk", "unselected");
    config.sketchRows = rows;
    config.sketchLambda = 0.25;
    config.sketchSeed = 12;
    checkAgainstModel(config, 3, 3001, 3, rowGradient(5, 16, false), scclAvg);
  }
  scclSparseConfig_t no_feedback = s2Config(0.02, 10, "nonzero", "unselected");
  no_feedback.errorFeedback = 0;
  checkAgainstModel(no_feedback, 4, 2000, 3, rowGradient(6, 10, false));
}

TEST_CASE("all-reduce of sketches equals the sketch of the summed gradient",
          "[sketch][linearity]") {
  // Integer values: every sum is exact, so the aggregate table is the sketch of the sum and the
  // decoded output is the decode of that sketch over the union of the ranks' blocks.
  const size_t count = 5000;
  const int block = 10;
  for (int nranks : {2, 3, 4, 8}) {
    scclSparseConfig_t config = s2Config(0.1, block, "nonzero", "unselected");
    GradientFn gradient = rowGradient(8, block, true);
    SparseRun run = runSparse(nranks, count, config, 1, gradient);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    std::vector<float> sum(count, 0.0f);
    std::vector<uint8_t> united((count + block - 1) / block, 0);
    size_t max_marked = 0;  // the width's basis with nonzero selection: max_r k_r
    for (int r = 0; r < nranks; ++r) {
      std::vector<float> g(count);
      for (size_t i = 0; i < count; ++i) g[i] = gradient(r, 0, i);
      std::vector<uint8_t> mine(united.size());
      REQUIRE(scclCountSketchMarkBlocks(g.data(), count, scclFloat32, block, mine.data(),
                                        nullptr) == scclSuccess);
      for (size_t b = 0; b < united.size(); ++b) united[b] |= mine[b];
      for (size_t i = 0; i < count; ++i) sum[i] += g[i];
      max_marked =
          std::max(max_marked, size_t(std::count(mine.begin(), mine.end(), 1)) * size_t(block));
    }
    const size_t width = size_t(std::ceil(0.5 * double(max_marked)));
    std::vector<float> table(3 * width, 0.0f), want(count);
    REQUIRE(scclCountSketchEncode(sum.data(), count, scclFloat32, block, united.data(), 3, width, 0,
                                  table.data(), nullptr) == scclSuccess);
    REQUIRE(scclCountSketchDecode(table.data(), scclFloat32, 3, width, 0, count, block,
                                  united.data(), want.data(), nullptr) == scclSuccess);
    for (int r = 0; r < nranks; ++r) {
      INFO("n=" << nranks << " rank " << r);
      CHECK(std::memcmp(run.calls[0][size_t(r)].output.data(), want.data(), count * 4) == 0);
    }
  }
}

TEST_CASE("s2 recovers the exact sum when no selected element collides", "[sketch][exact]") {
  // Block size 1, top-K selection with K = k above every rank's non-zero count (so every
  // non-zero is marked, and the width is the fixed ceil(lambda k)), and non-zeros only at
  // indices chosen so that no two share a bucket in any row of this sparsifier's sketch: every
  // estimate is then exact.
  const size_t count = 4096;
  const double density = 0.05, lambda = 8;
  const uint64_t k = uint64_t(std::floor(density * count));
  const uint64_t width = uint64_t(std::ceil(lambda * double(k)));
  std::vector<std::vector<char>> taken(3, std::vector<char>(width, 0));
  std::vector<char> allowed(count, 0);
  size_t kept = 0;
  for (size_t i = 0; i < count && kept < 120; i += 5) {
    bool free = true;
    for (uint32_t j = 0; j < 3; ++j)
      free = free &&
             !taken[j][sccl::sketchBucket(sccl::sketchHash(sccl::sketchRowKey(4, j), i), width)];
    if (!free) continue;
    for (uint32_t j = 0; j < 3; ++j)
      taken[j][sccl::sketchBucket(sccl::sketchHash(sccl::sketchRowKey(4, j), i), width)] = 1;
    allowed[i] = 1;
    ++kept;
  }
  REQUIRE(kept == 120);
  GradientFn gradient = [&](int r, uint64_t t, size_t i) {
    if (!allowed[i] || (i / 5 + size_t(r)) % 3 == 0) return 0.0f;
    return float(testValue(21, r + 10 * int(t), i)) + 0.5f;
  };
  for (int nranks : {1, 2, 3, 4, 8}) {
    for (scclRedOp_t op : {scclSum, scclAvg}) {
      scclSparseConfig_t config = s2Config(density, 1, "topk", "unselected");
      config.sketchLambda = lambda;
      config.sketchSeed = 4;
      SparseRun run = runSparse(nranks, count, config, 3, gradient, op);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      for (int t = 0; t < 3; ++t) {
        for (size_t i = 0; i < count; ++i) {
          float sum = gradient(0, uint64_t(t), i);
          for (int r = 1; r < nranks; ++r) sum += gradient(r, uint64_t(t), i);
          const float want = op == scclAvg && nranks > 1 ? sum / float(nranks) : sum;
          for (int r = 0; r < nranks; ++r) {
            INFO("n=" << nranks << " call " << t << " rank " << r << " index " << i);
            REQUIRE(run.calls[size_t(t)][size_t(r)].output[i] == want);
          }
        }
      }
    }
  }
}

TEST_CASE("s2 sizes the sketch from the call's non-zeros with nonzero selection",
          "[sketch][width]") {
  // Rank r's gradient is non-zero in blocks 0 .. 10 (r + 1) - 1 (plus, on call 1, ten more), so
  // the largest rank marks 10 n (+ 10) blocks of 10: c = ceil(lambda 100 n (+ 100)) whatever the
  // density, and the bytes of the call follow: header 32 + 2 (n-1)/n (r c 4 + blocks).
  const size_t count = 10000, block = 10;
  for (int nranks : {2, 3, 4}) {
    GradientFn gradient = [&](int r, uint64_t t, size_t i) {
      const size_t marked_blocks = 10 * size_t(r + 1) + (t == 1 ? 10 : 0);
      return i / block < marked_blocks ? float(i % 7) + 1.0f : 0.0f;
    };
    scclSparseConfig_t config = s2Config(0.3, int(block), "nonzero", "unselected");
    config.sketchLambda = 0.5;
    SparseRun run = runSparse(nranks, count, config, 2, gradient, scclSum);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (uint64_t t = 0; t < 2; ++t) {
      const uint64_t max_elements = 100 * uint64_t(nranks) + (t == 1 ? 100 : 0);
      const uint64_t width = (max_elements + 1) / 2;
      const uint64_t n = uint64_t(nranks);
      const uint64_t expected =
          32 + (3 * width * 4) * 2 * (n - 1) / n + (count / block) * 2 * (n - 1) / n;
      for (int r = 0; r < nranks; ++r) {
        INFO("n=" << nranks << " call " << t << " rank " << r);
        CHECK(run.calls[t][size_t(r)].stats.bytesSent == expected);
      }
    }
  }
}

TEST_CASE("s2 conserves the gradient with error feedback", "[sketch][conservation]") {
  // Integer-valued gradients: all sums below are exact in float32 and double.
  const size_t count = 3001;
  const int calls = 12;
  for (int nranks : {1, 2, 3, 4, 8}) {
    for (const char* feedback : {"unselected", "decode_error"}) {
      scclSparseConfig_t config = s2Config(0.05, 8, "topk", feedback);
      GradientFn gradient = [](int r, uint64_t t, size_t i) {
        return float(testValue(31, r * 100 + int(t), i));
      };
      SparseRun run = runSparse(nranks, count, config, calls, gradient);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      INFO(feedback << " n=" << nranks);
      if (std::strcmp(feedback, "unselected") == 0) {
        // Each rank: sum of gradients = what it encoded (acc where the residual was zeroed)
        // + its final residual.
        for (int r = 0; r < nranks; ++r) {
          std::vector<double> grads(count, 0.0), sent(count, 0.0);
          std::vector<float> previous(count, 0.0f);
          for (int t = 0; t < calls; ++t) {
            const RankIteration& call = run.calls[size_t(t)][size_t(r)];
            for (size_t i = 0; i < count; ++i) {
              const float g = gradient(r, uint64_t(t), i);
              grads[i] += g;
              if (call.residual[i] == 0.0f) sent[i] += double(previous[i] + g);
              previous[i] = call.residual[i];
            }
          }
          size_t violations = 0;
          for (size_t i = 0; i < count; ++i) violations += grads[i] != sent[i] + previous[i];
          CHECK(violations == 0);
        }
        continue;
      }
      // decode_error: over all ranks, sum of gradients = sum of outputs + sum of residuals, up
      // to the roundings of acc = residual + g, estimate / n and acc - estimate / n (each at most
      // half an ulp of its result); exact for n = 1 and 2, where no rounding occurs in 12 calls
      // (the fractions estimate / 2^t keep within float32's 24 bits).
      std::vector<double> grads(count, 0.0), outputs(count, 0.0), residuals(count, 0.0);
      std::vector<double> magnitude(count, 0.0);
      for (int t = 0; t < calls; ++t) {
        for (size_t i = 0; i < count; ++i) {
          outputs[i] += run.calls[size_t(t)][0].output[i];
          magnitude[i] += std::fabs(run.calls[size_t(t)][0].output[i]);
          for (int r = 0; r < nranks; ++r) {
            grads[i] += gradient(r, uint64_t(t), i);
            magnitude[i] += std::fabs(gradient(r, uint64_t(t), i)) +
                            std::fabs(run.calls[size_t(t)][size_t(r)].residual[i]);
          }
        }
      }
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i)
          residuals[i] += run.calls[calls - 1][size_t(r)].residual[i];
      size_t violations = 0;
      double worst = 0;
      for (size_t i = 0; i < count; ++i) {
        const double gap = std::fabs(grads[i] - (outputs[i] + residuals[i]));
        worst = std::max(worst, gap);
        violations += nranks <= 2 ? gap != 0.0 : gap > 2.4e-7 * magnitude[i];
      }
      INFO("largest gap " << worst);
      CHECK(violations == 0);
    }
  }
}

TEST_CASE("s2 runs on float16 bfloat16 and float64 with identical outputs on every rank",
          "[sketch][types]") {
  const size_t count = 2003;
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    scclSparseConfig_t config = s2Config(0.05, 9, "topk", "unselected");
    TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
      return double(gradientValue(41, r, t, i));
    };
    TypedSparseRun run = runTypedSparse(3, count, dtype, config, 3, gradient, scclAvg);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t t = 0; t < 3; ++t) {
      std::vector<std::vector<double>> grads(3, std::vector<double>(count));
      for (int r = 0; r < 3; ++r)
        for (size_t i = 0; i < count; ++i)
          grads[size_t(r)][i] = roundedGradient(dtype, gradient(r, t, i));
      INFO(sccl::dataTypeName(dtype) << " call " << t);
      for (int r = 0; r < 3; ++r) {
        REQUIRE(run.calls[t][size_t(r)].result == scclSuccess);
        CHECK(run.calls[t][size_t(r)].output == run.calls[t][0].output);
      }
      // float64: the double model, bitwise (16-bit types are checked for agreement only; their
      // float32 accumulators follow the float model of the other tests).
      if (dtype == scclFloat64 && t == 0) {
        SketchReference<double> model(modelOf(config, count), 3);
        SketchModelCall<double> want = model.step(grads, true);
        CHECK(std::memcmp(run.calls[0][0].output.data(), want.output.data(), count * 8) == 0);
        CHECK(run.calls[0][0].residual == model.residual(0));
      }
    }
  }
}

TEST_CASE("s2 discards a step with NaN and keeps the residual", "[sketch][nonfinite]") {
  const size_t count = 500;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    if (t == 1 && r == 1 && i == 77) return std::numeric_limits<float>::quiet_NaN();
    return gradientValue(2, r, t, i);
  };
  SparseRun run = runSparse(3, count, s2Config(0.05, 4, "topk", "unselected"), 3, gradient);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  for (int r = 0; r < 3; ++r) {
    CHECK(run.calls[1][size_t(r)].result == scclSuccess);
    CHECK(std::isnan(run.calls[1][size_t(r)].output[0]));
    CHECK(run.calls[1][size_t(r)].residual == run.calls[0][size_t(r)].residual);
    CHECK(run.calls[2][size_t(r)].stats.iteration == 2);
  }
  scclSparseConfig_t strict = s2Config(0.05, 4, "topk", "unselected");
  strict.nonFinite = scclNonFiniteError;
  SparseRun failing = runSparse(3, count, strict, 2, gradient);
  REQUIRE_NO_RANK_FAILURES(failing.failures);
  for (int r = 0; r < 3; ++r) CHECK(failing.calls[1][size_t(r)].result == scclInvalidArgument);
}

TEST_CASE("s2 config fields are validated and named in errors", "[sketch][config]") {
  struct Bad {
    const char* json;
    const char* key;
  };
  const Bad bad[] = {
      {R"({"sketch_block_size": 0})", "sketch_block_size"},
      {R"({"sketch_block_size": 1.5})", "sketch_block_size"},
      {R"({"sketch_block_selection": "largest"})", "sketch_block_selection"},
      {R"({"sketch_rows": 0})", "sketch_rows"},
      {R"({"sketch_rows": 17})", "sketch_rows"},
      {R"({"sketch_lambda": 0})", "sketch_lambda"},
      {R"({"sketch_lambda": 65})", "sketch_lambda"},
      {R"({"sketch_lambda": "half"})", "sketch_lambda"},
      {R"({"sketch_seed": -1})", "sketch_seed"},
      {R"({"sketch_feedback": "all"})", "sketch_feedback"},
  };
  for (const Bad& b : bad) {
    scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
    config.algorithm = "s2";
    INFO(b.json);
    CHECK(scclSparseConfigFromJson(b.json, &config) == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find(b.key) != std::string::npos);
    CHECK(config.sketchBlockSize == 32);  // untouched
    CHECK(config.sketchRows == 3);
  }
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  REQUIRE(scclSparseConfigFromJson(
              R"({"algorithm": "s2", "sketch_block_size": 64, "sketch_block_selection": "nonzero",
                  "sketch_rows": 5, "sketch_lambda": 0.25, "sketch_seed": 9,
                  "sketch_feedback": "decode_error"})",
              &config) == scclSuccess);
  CHECK(std::string(config.algorithm) == "s2");
  CHECK(config.sketchBlockSize == 64);
  CHECK(std::string(config.sketchBlockSelection) == "nonzero");
  CHECK(config.sketchRows == 5);
  CHECK(config.sketchLambda == 0.25);
  CHECK(config.sketchSeed == 9);
  CHECK(std::string(config.sketchFeedback) == "decode_error");

  // Direct struct errors name the field; a config differing only in a sketch field differs in
  // the fingerprint (creation fails on every rank).
  std::vector<std::string> failures = runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t c = sparseConfig("s2", 0.01);
    c.sketchRows = 0;
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 100, scclFloat32, &c), scclInvalidArgument,
                    "sketchRows 0");
    log.check(std::string(scclGetLastError(comm)).find("sketchRows") != std::string::npos,
              "message names sketchRows");
    c.sketchRows = 3;
    c.sketchSeed = rank;  // differs across ranks
    log.checkResult(scclSparsifierCreate(&sp, comm, 100, scclFloat32, &c), scclInvalidUsage,
                    "seed differing across ranks");
    c.sketchSeed = 0;
    c.densityCorrection = "histogram";  // needs gather + exclusive search
    log.checkResult(scclSparsifierCreate(&sp, comm, 100, scclFloat32, &c), scclInvalidArgument,
                    "histogram correction with the sketch");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
