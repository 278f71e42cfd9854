// kthLargestAbs on the CPU against an independent reference (magnitudes as long double, NaN
// sorted above +inf): small ranges (resolved on a copy), large ones (histogram passes over the
// data), heavy ties and narrow distributions (several filtered passes), on every ISA and split.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernels.h"
#include "unit/cpu_kernel_test_data.h"

namespace {

using cpu_kernel_test::CpuIsa;
using cpu_kernel_test::encodeValues;
using cpu_kernel_test::exactValue;
using cpu_kernel_test::KernelSettingsGuard;
using cpu_kernel_test::kPartCounts;
using cpu_kernel_test::makeData;
using cpu_kernel_test::mix;
using cpu_kernel_test::supportedIsas;
using Bytes = std::vector<unsigned char>;

constexpr scclDataType_t kFloatTypes[] = {scclFloat32, scclFloat64, scclFloat16, scclBfloat16};

// The magnitudes of [begin, end), largest first, NaN before everything else.
std::vector<long double> sortedMagnitudes(scclDataType_t dtype, const Bytes& data, size_t begin,
                                          size_t end) {
  std::vector<long double> magnitudes;
  for (size_t i = begin; i < end; ++i)
    magnitudes.push_back(std::fabs(exactValue(dtype, data.data(), i)));
  std::sort(magnitudes.begin(), magnitudes.end(), [](long double a, long double b) {
    if (std::isnan(a)) return !std::isnan(b);
    return !std::isnan(b) && a > b;
  });
  return magnitudes;
}

double kernelKth(scclDataType_t dtype, const Bytes& data, size_t begin, size_t end, uint64_t k) {
  double value = -1;
  REQUIRE(sccl::cpuKernels().kthLargestAbs(data.data(), dtype, begin, end, k, &value, nullptr) ==
          scclSuccess);
  return value;
}

// Same value, NaN matching NaN; a zero answer must be +0.
bool sameMagnitude(double got, long double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == double(want) && !std::signbit(got);
}

// The k to try for a range of n elements: the ends, the neighbours of the ends, the usual
// densities of top-k selection, a quartile and the median.
std::vector<uint64_t> ranksFor(size_t n) {
  std::vector<uint64_t> ks = {1, 2, n / 1000, n / 100, n / 4, n / 2, n - 1, n};
  ks.erase(std::remove_if(ks.begin(), ks.end(), [n](uint64_t k) { return k < 1 || k > n; }),
           ks.end());
  return ks;
}

// Every rank of ranksFor on every ISA and part count against the reference.
void checkAllRanks(scclDataType_t dtype, const Bytes& data, size_t begin, size_t end) {
  const std::vector<long double> want = sortedMagnitudes(dtype, data, begin, end);
  for (uint64_t k : ranksFor(end - begin)) {
    for (CpuIsa isa : supportedIsas()) {
      sccl::setCpuIsaForTesting(isa);
      for (int parts : kPartCounts) {
        sccl::setKernelPartsForTesting(parts);
        INFO(sccl::dataTypeName(dtype) << " [" << begin << ", " << end << ") k " << k << " isa "
                                       << sccl::cpuIsaName(isa) << " parts " << parts);
        double got = kernelKth(dtype, data, begin, end, k);
        CHECK(sameMagnitude(got, want[k - 1]));
      }
    }
  }
}

}  // namespace

TEST_CASE("cpu kthLargestAbs: NaN ranks above infinity and ties count once per element",
          "[kernels][kth_largest]") {
  const double nan = std::nan("");
  const std::vector<double> values = {3, -7, nan, INFINITY, -INFINITY, 0, -0.0, 7, 0.5, -nan};
  const Bytes f32 = encodeValues(scclFloat32, values);
  const double want[] = {nan, nan, INFINITY, INFINITY, 7, 7, 3, 0.5, 0, 0};
  for (uint64_t k = 1; k <= values.size(); ++k) {
    INFO("k " << k);
    CHECK(sameMagnitude(kernelKth(scclFloat32, f32, 0, values.size(), k), want[k - 1]));
  }
  // A sub-range, and the same list in every dtype.
  CHECK(kernelKth(scclFloat32, f32, 5, 9, 1) == 7);
  CHECK(kernelKth(scclFloat32, f32, 5, 9, 4) == 0);
  for (scclDataType_t dtype : kFloatTypes) {
    INFO(sccl::dataTypeName(dtype));
    const Bytes data = encodeValues(dtype, values);
    for (uint64_t k = 1; k <= values.size(); ++k) {
      CHECK(sameMagnitude(kernelKth(dtype, data, 0, values.size(), k), want[k - 1]));
    }
  }
}

TEST_CASE("cpu kthLargestAbs: exact for small and large ranges on every ISA and split",
          "[kernels][kth_largest][isa]") {
  KernelSettingsGuard guard;
  for (scclDataType_t dtype : kFloatTypes) {
    // 3000: a copy and nth_element; 50000: a copy and histogram levels; 200003: passes over the
    // data, in parts.
    for (size_t n : {size_t{3000}, size_t{50000}, size_t{200003}}) {
      const Bytes data = makeData(dtype, n, 17 + n + dtype);
      checkAllRanks(dtype, data, 3, n - 5);
    }
  }
}

TEST_CASE("cpu kthLargestAbs: heavy ties and narrow ranges of values resolve every digit",
          "[kernels][kth_largest][isa]") {
  KernelSettingsGuard guard;
  const size_t n = 200000;
  std::vector<double> mostly_equal(n), tenth_equal(n), all_equal(n, -2.5), narrow(n);
  std::vector<double> all_nan(n, std::nan(""));
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = mix(31, i);
    mostly_equal[i] = r % 5 == 0 ? double(r % 1000) / 7 : 1.5;
    // Few enough to be copied after the first pass, too many to finish with nth_element.
    tenth_equal[i] = r % 10 == 0 ? 1.5 : cpu_kernel_test::sampleValue(37, i, true);
    narrow[i] = (r & 1 ? 1 : -1) * (1 + double(i) * 0x1.0p-40);  // one binade, low bits differ
  }
  for (scclDataType_t dtype : kFloatTypes) {
    for (const auto* values : {&mostly_equal, &tenth_equal, &all_equal, &narrow, &all_nan}) {
      checkAllRanks(dtype, encodeValues(dtype, *values), 0, n);
    }
  }
  // float32 keys that agree in their top 12 bits and spread over the low 19.
  std::vector<double> narrow32(n);
  for (size_t i = 0; i < n; ++i) narrow32[i] = 1 + double(mix(5, i) % (1u << 19)) * 0x1.0p-23;
  checkAllRanks(scclFloat32, encodeValues(scclFloat32, narrow32), 0, n);
}

TEST_CASE("cpu kthLargestAbs: k outside 1 to the range size and integer dtypes are rejected",
          "[kernels][kth_largest]") {
  const Bytes data = encodeValues(scclFloat32, {1, 2, 3});
  const auto& kernels = sccl::cpuKernels();
  double value = 0;
  CHECK(kernels.kthLargestAbs(data.data(), scclFloat32, 0, 3, 0, &value, nullptr) ==
        scclInvalidArgument);
  CHECK(kernels.kthLargestAbs(data.data(), scclFloat32, 0, 3, 4, &value, nullptr) ==
        scclInvalidArgument);
  CHECK(kernels.kthLargestAbs(data.data(), scclFloat32, 1, 1, 1, &value, nullptr) ==
        scclInvalidArgument);
  CHECK(kernels.kthLargestAbs(data.data(), scclInt32, 0, 3, 1, &value, nullptr) ==
        scclInvalidArgument);
  CHECK(value == 0);
}

TEST_CASE("cpu kthLargestAbs: many threads selecting at once keep their own scratch",
          "[kernels][kth_largest][threads]") {
  const size_t n = 300000;  // passes over the data, on the pool
  const Bytes data = makeData(scclFloat32, n, 23);
  const std::vector<long double> sorted = sortedMagnitudes(scclFloat32, data, 0, n);
  const uint64_t ranks[] = {1, 300, 3000, 150000, n};
  std::vector<int> mismatches(std::size(ranks), 0);
  std::vector<std::thread> callers;
  for (size_t c = 0; c < std::size(ranks); ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 5; ++round) {
        double value = -1;
        sccl::cpuKernels().kthLargestAbs(data.data(), scclFloat32, 0, n, ranks[c], &value, nullptr);
        mismatches[c] += sameMagnitude(value, sorted[ranks[c] - 1]) ? 0 : 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int m : mismatches) CHECK(m == 0);
}

TEST_CASE("cpu kthLargestAbs: a misleading sample falls back to the histogram passes",
          "[kernels][kth_largest]") {
  KernelSettingsGuard guard;
  // For top-k ranks the kernel first samples 16384 keys at a stride of n / 16384 (16 here, so
  // the sample is exactly the elements at multiples of 16) and selects above a bound taken from
  // it. Data that differs at those positions makes the bound wrong in both directions.
  const size_t n = size_t{16384} * 16;
  std::vector<double> sampled_large(n), sampled_small(n);
  for (size_t i = 0; i < n; ++i) {
    double large = 1000 + double(mix(41, i) % 100000), small = double(mix(43, i) % 1000) / 1000;
    sampled_large[i] = i % 16 == 0 ? large : small;  // bound too high: fewer than k above it
    sampled_small[i] = i % 16 == 0 ? small : large;  // bound too low: too many above it
  }
  for (scclDataType_t dtype : {scclFloat32, scclFloat64}) {
    for (const auto* values : {&sampled_large, &sampled_small}) {
      const Bytes data = encodeValues(dtype, *values);
      const std::vector<long double> want = sortedMagnitudes(dtype, data, 0, n);
      for (uint64_t k : {uint64_t{1000}, uint64_t{n / 12}}) {
        INFO(sccl::dataTypeName(dtype) << " k " << k);
        CHECK(sameMagnitude(kernelKth(dtype, data, 0, n, k), want[k - 1]));
      }
    }
  }
}
