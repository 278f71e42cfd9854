// The in-call density correction (densityCorrection "histogram", algorithms/density_correction.cc)
// and its counting kernel: the bit-pattern histogram against a direct count, the correction's
// accuracy on every call, recovery from an initial threshold far from the target in either
// direction, float64 gradients, all-zero gradients, and which configurations may use it.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu_kernel_test_data.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernels.h"
#include "support/laplace_streams.h"
#include "support/sparse_runs.h"
#include "support/sparse_streams.h"

using namespace sccl_test;
using namespace cpu_kernel_test;

namespace {

// Magnitudes spread over many octaves, plus the special values the histogram must place.
template <typename T>
std::vector<T> histogramInput(size_t n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> exponent(-12, 12);
  std::vector<T> x(n);
  for (size_t i = 0; i < n; ++i) {
    const double magnitude = std::exp2(exponent(random));
    x[i] = T((random() & 1) ? magnitude : -magnitude);
  }
  const T specials[] = {T(0),
                        -T(0),
                        std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::max(),
                        T(1),
                        T(0.5)};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i * 97 < n; ++i)
    x[i * 97] = specials[i];
  return x;
}

template <typename T, typename Bits>
std::vector<uint64_t> directCounts(const std::vector<T>& x, size_t begin, size_t end, uint64_t base,
                                   unsigned shift, size_t bins) {
  std::vector<uint64_t> counts(bins + 1, 0);
  for (size_t i = begin; i < end; ++i) {
    const Bits magnitude = std::bit_cast<Bits>(x[i]) & (std::numeric_limits<Bits>::max() >> 1);
    if (magnitude < base) continue;
    const uint64_t bin = uint64_t(magnitude - base) >> shift;
    ++counts[bin < bins ? bin : bins];
  }
  return counts;
}

// The count at or above edge j equals what selectAbove selects at that edge's value.
template <typename T>
void checkEdgesMatchSelection(const std::vector<T>& x, scclDataType_t dtype, size_t begin,
                              size_t end, uint64_t base, unsigned shift, size_t bins,
                              const std::vector<uint64_t>& counts) {
  uint64_t at_or_above = counts[bins];
  for (size_t j = bins + 1; j-- > 0;) {
    if (j < bins) at_or_above += counts[j];
    if (j % 7 != 0 && j != bins) continue;  // a sample of edges keeps the test fast
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const double edge = double(std::bit_cast<T>(Bits(base + (uint64_t(j) << shift))));
    size_t selected = 0;
    REQUIRE(sccl::cpuKernels().selectAbove(x.data(), dtype, begin, end, edge, nullptr, nullptr, 0,
                                           &selected, nullptr) == scclSuccess);
    INFO("edge " << j << " value " << edge);
    CHECK(selected == at_or_above);
  }
}

template <typename T>
void checkHistogram(scclDataType_t dtype, unsigned mantissa_bits) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const size_t n = 200003;
  const std::vector<T> x = histogramInput<T>(n, 17);
  const size_t begin = 13, end = n - 5;
  const unsigned shift = mantissa_bits - 5;  // 32 bins per octave
  const size_t bins = 2 * 4 * 32;            // +-4 octaves around 1
  const uint64_t base = uint64_t(std::bit_cast<Bits>(T(1.0 / 16)));
  const auto want = directCounts<T, Bits>(x, begin, end, base, shift, bins);
  uint64_t in_window = 0;
  for (size_t j = 0; j < bins; ++j) in_window += want[j];
  REQUIRE(in_window > n / 5);  // the window holds a good share of the values
  {
    KernelSettingsGuard restore;
    for (CpuIsa isa : supportedIsas()) {
      sccl::setCpuIsaForTesting(isa);
      for (int parts : kPartCounts) {
        sccl::setKernelPartsForTesting(parts);
        std::vector<uint64_t> counts(bins + 1, 12345);
        REQUIRE(sccl::cpuKernels().absBitHistogram(x.data(), dtype, begin, end, base, shift, bins,
                                                   counts.data(), nullptr) == scclSuccess);
        INFO("isa " << sccl::cpuIsaName(isa) << " parts " << parts);
        CHECK(counts == want);
      }
    }
  }
  checkEdgesMatchSelection(x, dtype, begin, end, base, shift, bins, want);
}

}  // namespace

TEST_CASE("absBitHistogram counts like a direct loop and its edges split like selectAbove",
          "[kernels][correction]") {
  checkHistogram<float>(scclFloat32, 23);
  checkHistogram<double>(scclFloat64, 52);
}

TEST_CASE("absBitHistogram places zero inf and NaN and rejects other types",
          "[kernels][correction]") {
  const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -2.0f};
  std::vector<uint64_t> counts(5);
  // Window from pattern 0 (zero) with bins of 2^29 patterns: zero, 1 and 2, then inf, NaN above.
  REQUIRE(sccl::cpuKernels().absBitHistogram(x, scclFloat32, 0, 7, 0, 29, 4, counts.data(),
                                             nullptr) == scclSuccess);
  // 1.0f = 0x3f800000 and 2.0f = 0x40000000 fall in bin 1 (0x20000000-0x3fffffff) and bin 2;
  // inf 0x7f800000 in bin 3; NaN 0x7fc00000 in bin 3 as well (below 4 << 29 = 0x80000000).
  CHECK(counts == std::vector<uint64_t>{2, 1, 1, 3, 0});
  CHECK(sccl::cpuKernels().absBitHistogram(x, scclFloat16, 0, 7, 0, 10, 4, counts.data(),
                                           nullptr) == scclInvalidArgument);
  CHECK(sccl::cpuKernels().absBitHistogram(x, scclFloat32, 0, 7, 0, 32, 4, counts.data(),
                                           nullptr) == scclInvalidArgument);
}

TEST_CASE("the corrected threshold selects within 3 percent of k on every call",
          "[sparse][density][correction]") {
  // 131072 elements, k = 1310: the correction's bin at the target holds about
  // k ln(100) / 256 = 24 entries for an exponential tail, so rounding to the nearer edge is off
  // by at most about 12 entries (0.9 %). With error feedback the residual piles up just below the
  // last threshold and a bin there can hold two or three times more; the gradient scale here
  // jumps by up to 30 % from one call to the next. 3 % bounds both.
  const size_t count = 131072;
  const double density = 0.01, b = laplaceScaleFor(count, density);
  for (const char* algorithm : {"micro", "exdyna"}) {
    for (int nranks : {1, 3, 4}) {
      GradientFill fill = [&](int rank, uint64_t t, float* grad) {
        fillLaplace(21, rank, t, grad, count, float(b * (1 + 0.3 * std::sin(double(t)))));
      };
      StreamRun run = runSparseStream(nranks, count, sparseConfig(algorithm, density), 30, fill);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      for (size_t t = 0; t < run.calls.size(); ++t) {
        const scclSparseStats_t& s = run.calls[t][0].stats;
        INFO(algorithm << " n " << nranks << " call " << t << " k' " << s.kGlobal);
        CHECK(std::fabs(double(s.kGlobal) / double(s.kTarget) - 1) <= 0.03);
      }
    }
  }
}

TEST_CASE("the correction recovers from an initial threshold far from the target",
          "[sparse][density][correction]") {
  // The bins reach one octave each way, so a threshold 1000x off is out of reach at first: the
  // window edge nearest the target is used and adopted, and the scaling rule moves on from
  // there by up to 4x per call (8x with the adopted edge). Too high, nothing is selected until
  // the threshold comes within reach, and error feedback keeps every value meanwhile, so the
  // accumulated magnitudes grow too: measured 12 calls from 1000x too high, 9 from 1e-6.
  const size_t count = 65536;
  const double density = 0.01, b = laplaceScaleFor(count, density);
  GradientFill fill = [&](int rank, uint64_t t, float* grad) {
    fillLaplace(22, rank, t, grad, count, float(b));
  };
  for (double initial : {1000.0, 1e-6}) {
    scclSparseConfig_t config = sparseConfig("micro", density);
    config.threshold = initial;
    StreamRun run = runSparseStream(4, count, config, 40, fill);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    const scclSparseStats_t& first = run.calls[0][0].stats;
    INFO("initial threshold " << initial << ": first call k' " << first.kGlobal);
    CHECK(std::fabs(double(first.kGlobal) / double(first.kTarget) - 1) > 0.5);
    size_t settled = run.calls.size();
    for (size_t t = 0; t < run.calls.size(); ++t) {
      const scclSparseStats_t& s = run.calls[t][0].stats;
      if (std::fabs(double(s.kGlobal) / double(s.kTarget) - 1) <= 0.03) {
        settled = t;
        break;
      }
    }
    WARN("initial threshold " << initial << ": within 3 % of k from call " << settled);
    CHECK(settled <= 15);
    CHECK(meanAbsDensityError(run, 20, 40) <= 0.03);
  }
}

TEST_CASE("the correction works on float64 gradients and all-zero gradients",
          "[sparse][density][correction]") {
  const size_t count = 40000;
  const double density = 0.01, b = laplaceScaleFor(count, density);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    const scclSparseConfig_t config = sparseConfig("exdyna", density);
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat64, &config), scclSuccess,
                         "create"))
      return;
    std::vector<float> values(count);
    std::vector<double> grad(count), out(count);
    for (int t = 0; t < 10; ++t) {
      fillLaplace(23, rank, uint64_t(t), values.data(), count, float(b));
      for (size_t i = 0; i < count; ++i) grad[i] = double(values[i]) * (1 + 1e-9 * double(i));
      log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat64, scclSum, sp,
                                          comm, nullptr),
                      scclSuccess, "float64 call");
      scclSparseStats_t stats{};
      stats.size = sizeof(stats);
      log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "stats");
      if (t >= 2) {
        log.check(std::fabs(double(stats.kGlobal) / double(stats.kTarget) - 1) <= 0.03,
                  "float64 call " + std::to_string(t) + ": k' " + std::to_string(stats.kGlobal));
      }
    }
    scclSparsifierDestroy(sp);
    // All-zero gradients: nothing to select, and the threshold stays a finite positive number.
    scclSparsifier_t zero_sp = nullptr;
    const scclSparseConfig_t micro = sparseConfig("micro", density);
    if (!log.checkResult(scclSparsifierCreate(&zero_sp, comm, count, scclFloat32, &micro),
                         scclSuccess, "create float32"))
      return;
    std::vector<float> zeros(count, 0.0f), zero_out(count, 1.0f);
    for (int t = 0; t < 5; ++t) {
      log.checkResult(scclSparseAllreduce(zeros.data(), zero_out.data(), count, scclFloat32,
                                          scclSum, zero_sp, comm, nullptr),
                      scclSuccess, "zero call");
    }
    scclSparseStats_t stats{};
    stats.size = sizeof(stats);
    log.checkResult(scclSparsifierGetStats(zero_sp, &stats), scclSuccess, "stats");
    log.check(stats.kGlobal == 0, "all-zero gradients select nothing");
    log.check(std::isfinite(stats.threshold) && stats.threshold > 0, "threshold finite and > 0");
    bool all_zero = true;
    for (float v : zero_out) all_zero = all_zero && v == 0.0f;
    log.check(all_zero, "all-zero gradients give an all-zero result");
    scclSparsifierDestroy(zero_sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("the histogram correction applies only where it can", "[sparse][correction][errors]") {
  auto failures = runLocalRanks(2, [&](int, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    // Explicitly asked for where it cannot apply: an error naming the option, no sparsifier.
    for (const char* algorithm : {"hard_threshold", "topk", "cltk", "dense"}) {
      scclSparseConfig_t config = sparseConfig(algorithm, 0.01);
      config.densityCorrection = "histogram";
      log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &config),
                      scclInvalidArgument, std::string("histogram with ") + algorithm);
      log.check(
          std::string(scclGetLastError(nullptr)).find("densityCorrection") != std::string::npos,
          "the message names densityCorrection");
    }
    scclSparseConfig_t fixed_micro = sparseConfig("micro", 0.01);
    fixed_micro.estimator = "fixed";
    fixed_micro.densityCorrection = "histogram";
    log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &fixed_micro),
                    scclInvalidArgument, "histogram with a fixed threshold");
    // The preset's default gives way where it cannot apply: MiCRO partitions with exact top-k.
    scclSparseConfig_t topk_micro = sparseConfig("micro", 0.01);
    topk_micro.estimator = "topk";
    if (log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &topk_micro),
                        scclSuccess, "micro partitions with topk"))
      scclSparsifierDestroy(sp);
    // Hard threshold over MiCRO partitions keeps its fixed threshold.
    scclSparseConfig_t hard_micro = sparseConfig("hard_threshold", 0.01);
    hard_micro.searchSpace = "micro";
    if (log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &hard_micro),
                        scclSuccess, "hard threshold over micro partitions")) {
      std::vector<float> grad(1000, 0.5f), out(1000);
      log.checkResult(scclSparseAllreduce(grad.data(), out.data(), 1000, scclFloat32, scclSum, sp,
                                          comm, nullptr),
                      scclSuccess, "call");
      scclSparseStats_t stats{};
      stats.size = sizeof(stats);
      scclSparsifierGetStats(sp, &stats);
      log.check(stats.threshold == 1 / (2 * std::sqrt(10.0)), "the fixed threshold is kept");
      scclSparsifierDestroy(sp);
    }
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
