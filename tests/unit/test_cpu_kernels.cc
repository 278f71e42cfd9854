// The CPU kernel backend: the selection predicate and threshold rounding pinned element by element,
// and every kernel checked against a plain reference and for bitwise-identical results on every
// instruction set this processor supports and every split into parts (testing hooks).
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/select.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernels.h"
#include "unit/cpu_kernel_test_data.h"

namespace {

using cpu_kernel_test::CpuIsa;
using cpu_kernel_test::exactValue;
using cpu_kernel_test::KernelSettingsGuard;
using cpu_kernel_test::kInf;
using cpu_kernel_test::kNan;
using cpu_kernel_test::kPartCounts;
using cpu_kernel_test::makeData;
using cpu_kernel_test::mix;
using cpu_kernel_test::supportedIsas;

struct Selection {
  std::vector<int64_t> idx;
  std::vector<unsigned char> val;
  size_t nselected = 0;
};

// The contract, written independently of the kernels: exact real comparison in long double.
Selection referenceSelect(scclDataType_t dtype, const std::vector<unsigned char>& data,
                          size_t begin, size_t end, double threshold) {
  Selection s;
  size_t width = sccl::dataTypeSize(dtype);
  for (size_t i = begin; i < end; ++i) {
    if (!(std::fabs(exactValue(dtype, data.data(), i)) < static_cast<long double>(threshold))) {
      s.idx.push_back(int64_t(i));
      s.val.insert(s.val.end(), data.begin() + i * width, data.begin() + (i + 1) * width);
    }
  }
  s.nselected = s.idx.size();
  return s;
}

Selection kernelSelect(scclDataType_t dtype, const void* data, size_t begin, size_t end,
                       double threshold, size_t capacity, bool with_values = true) {
  Selection s;
  s.idx.assign(capacity, -1);
  s.val.assign(capacity * sccl::dataTypeSize(dtype), 0xAB);
  REQUIRE(sccl::cpuKernels().selectAbove(data, dtype, begin, end, threshold, s.idx.data(),
                                         with_values ? s.val.data() : nullptr, capacity,
                                         &s.nselected, nullptr) == scclSuccess);
  size_t written = std::min(capacity, s.nselected);
  s.idx.resize(written);
  s.val.resize(with_values ? written * sccl::dataTypeSize(dtype) : 0);
  return s;
}

template <typename T>
Selection selectValues(const std::vector<T>& x, scclDataType_t dtype, double threshold) {
  return kernelSelect(dtype, x.data(), 0, x.size(), threshold, x.size() + 1);
}

std::vector<int64_t> indices(std::initializer_list<int64_t> list) {
  return list;
}

}  // namespace

TEST_CASE("cpu select: an element qualifies iff not |x| < threshold so NaN always does",
          "[kernels][select]") {
  std::vector<float> x = {0.5f, -1.0f, 1.0f, kNan, -kNan, kInf, -kInf, 0.99999994f, -2.0f, 0.0f};
  CHECK(selectValues(x, scclFloat32, 1.0).idx == indices({1, 2, 3, 4, 5, 6, 8}));
  CHECK(selectValues(x, scclFloat32, INFINITY).idx == indices({3, 4, 5, 6}));
  // Threshold 0 (and -0.0, which is >= 0) takes every element, zeros included.
  CHECK(selectValues(x, scclFloat32, 0.0).nselected == x.size());
  CHECK(selectValues(x, scclFloat32, -0.0).nselected == x.size());
}

TEST_CASE("cpu select: the threshold is compared exactly and not rounded to nearest",
          "[kernels][select]") {
  const float above_one = std::nextafter(1.0f, 2.0f);
  std::vector<float> f32 = {1.0f, above_one, FLT_MAX, kInf, 0.0f, 1e-45f};
  CHECK(selectValues(f32, scclFloat32, 1.0 + 0x1.0p-40).idx == indices({1, 2, 3}));
  CHECK(selectValues(f32, scclFloat32, double(FLT_MAX) * (1 + 0x1.0p-40)).idx == indices({3}));
  CHECK(selectValues(f32, scclFloat32, 1e-320).idx == indices({0, 1, 2, 3, 5}));

  std::vector<uint16_t> f16 = {0x3c00, 0x3c01, 0x7bff, 0x7c00, 0x0000, 0x0001};  // 1, 1+2^-10, ...
  CHECK(selectValues(f16, scclFloat16, 1.0 + 0x1.0p-20).idx == indices({1, 2, 3}));
  CHECK(selectValues(f16, scclFloat16, 65504.0 + 1e-9).idx == indices({3}));
  CHECK(selectValues(f16, scclFloat16, 1e-30).idx == indices({0, 1, 2, 3, 5}));

  std::vector<uint16_t> bf16 = {0x3f80, 0x3f81, 0x7f7f, 0x7f80, 0x8000, 0xffc0};  // 1, ..., -0, NaN
  CHECK(selectValues(bf16, scclBfloat16, 1.0 + 0x1.0p-20).idx == indices({1, 2, 3, 5}));
  CHECK(selectValues(bf16, scclBfloat16, 3.3895313892515355e38 * (1 + 1e-12)).idx ==
        indices({3, 5}));

  std::vector<double> f64 = {1.0, std::nextafter(1.0, 2.0), -std::nextafter(1.0, 0.0)};
  CHECK(selectValues(f64, scclFloat64, std::nextafter(1.0, 2.0)).idx == indices({1}));
  CHECK(selectValues(f64, scclFloat64, std::nextafter(1.0, 0.0)).idx == indices({0, 1, 2}));
}

TEST_CASE("cpu select: absolute ascending indices inside the range and values as stored",
          "[kernels][select]") {
  const auto data = makeData(scclFloat32, 5000, 11);
  Selection got = kernelSelect(scclFloat32, data.data(), 1234, 4321, 1.5, 5000);
  Selection want = referenceSelect(scclFloat32, data, 1234, 4321, 1.5);
  REQUIRE(want.nselected > 100);
  CHECK(got.nselected == want.nselected);
  CHECK(got.idx == want.idx);
  CHECK(got.val == want.val);
  CHECK(got.idx.front() >= 1234);
  CHECK(got.idx.back() < 4321);
  CHECK(kernelSelect(scclFloat32, data.data(), 77, 77, 0.0, 4).nselected == 0);
}

TEST_CASE("cpu select: capacity keeps the first entries and nselected counts them all",
          "[kernels][select]") {
  KernelSettingsGuard guard;
  const size_t n = 300000;
  const auto data = makeData(scclFloat32, n, 5);
  // ~13 % and ~60 % selected: the second stages enough entries to copy them in parallel slices.
  for (double threshold : {2.0, 0.5}) {
    Selection want = referenceSelect(scclFloat32, data, 0, n, threshold);
    for (int parts : kPartCounts) {
      sccl::setKernelPartsForTesting(parts);
      for (size_t capacity :
           {size_t{1}, size_t{1000}, want.nselected / 2, want.nselected - 1, want.nselected}) {
        INFO("threshold " << threshold << " parts " << parts << " capacity " << capacity);
        Selection got = kernelSelect(scclFloat32, data.data(), 0, n, threshold, capacity);
        CHECK(got.nselected == want.nselected);
        REQUIRE(got.idx.size() == capacity);
        CHECK(std::equal(got.idx.begin(), got.idx.end(), want.idx.begin()));
        CHECK(std::equal(got.val.begin(), got.val.end(), want.val.begin()));
      }
      Selection indices_only = kernelSelect(scclFloat32, data.data(), 0, n, threshold, n, false);
      CHECK(indices_only.idx == want.idx);
    }
  }
}

TEST_CASE("cpu select: every ISA and every split give the reference selection bitwise",
          "[kernels][select][isa]") {
  KernelSettingsGuard guard;
  const size_t n = 200003;  // odd: parts and groups of 64 leave tails
  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
    const auto data = makeData(dtype, n, 42 + dtype);
    // Densities from 100 % to none; 4.6 (~1 %) makes the driver switch to branch-free emission.
    for (double threshold : {0.0, 1e-30, 2.0, 4.6, 6.5, 1e300, double(INFINITY)}) {
      Selection want = referenceSelect(dtype, data, 3, n - 5, threshold);
      for (CpuIsa isa : supportedIsas()) {
        sccl::setCpuIsaForTesting(isa);
        for (int parts : kPartCounts) {
          sccl::setKernelPartsForTesting(parts);
          INFO(sccl::dataTypeName(dtype) << " threshold " << threshold << " isa "
                                         << sccl::cpuIsaName(isa) << " parts " << parts);
          Selection got = kernelSelect(dtype, data.data(), 3, n - 5, threshold, n);
          REQUIRE(got.nselected == want.nselected);
          CHECK(got.idx == want.idx);
          CHECK(got.val == want.val);
        }
      }
    }
  }
}

TEST_CASE("cpu select: both emit styles of every block kernel give the same entries",
          "[kernels][select][isa]") {
  const size_t n = 70001;
  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
    const auto data = makeData(dtype, n, 3);
    const size_t width = sccl::dataTypeSize(dtype);
    for (double threshold : {0.0, 2.0, 4.6, 6.5}) {
      Selection want = referenceSelect(dtype, data, 1, n, threshold);
      uint64_t bits = sccl::cpu_select::thresholdBits(dtype, threshold);
      for (CpuIsa isa : supportedIsas()) {
        for (auto style :
             {sccl::cpu_select::EmitStyle::Branchy, sccl::cpu_select::EmitStyle::BranchFree}) {
          INFO(sccl::dataTypeName(dtype) << " " << threshold << " " << sccl::cpuIsaName(isa));
          Selection got;
          got.idx.resize(n);
          got.val.resize(n * width);
          auto kernel = sccl::cpu_select::blockSelectFor(isa, width);
          got.nselected = kernel(data.data(), 1, n, bits, style, got.idx.data(), got.val.data());
          REQUIRE(got.nselected == want.nselected);
          got.idx.resize(got.nselected);
          got.val.resize(got.nselected * width);
          CHECK(got.idx == want.idx);
          CHECK(got.val == want.val);
        }
      }
    }
  }
}

TEST_CASE("cpu select: many threads selecting at once share the pool safely",
          "[kernels][select][threads]") {
  const size_t n = 400000;  // large enough to use the pool
  const auto data = makeData(scclFloat32, n, 9);
  const double thresholds[] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0};
  std::vector<Selection> want;
  for (double t : thresholds) want.push_back(referenceSelect(scclFloat32, data, 0, n, t));
  std::vector<int> mismatches(std::size(thresholds), 0);
  std::vector<std::thread> callers;
  for (size_t c = 0; c < std::size(thresholds); ++c) {
    callers.emplace_back([&, c] {
      std::vector<int64_t> idx(n);
      std::vector<float> val(n);
      for (int round = 0; round < 10; ++round) {
        size_t got = 0;
        sccl::cpuKernels().selectAbove(data.data(), scclFloat32, 0, n, thresholds[c], idx.data(),
                                       val.data(), n, &got, nullptr);
        bool same = got == want[c].nselected &&
                    std::equal(want[c].idx.begin(), want[c].idx.end(), idx.begin());
        mismatches[c] += same ? 0 : 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int m : mismatches) CHECK(m == 0);
}

TEST_CASE("cpu thread pool: every task runs exactly once with concurrent submitters",
          "[kernels][threads]") {
  sccl::ThreadPool pool(3);
  const size_t kSubmitters = 12, kJobs = 200, kTasks = 9;
  std::vector<std::vector<int>> runs(kSubmitters, std::vector<int>(kTasks, 0));
  std::vector<std::thread> submitters;
  for (size_t s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      for (size_t job = 0; job < kJobs; ++job) {
        pool.parallelFor(kTasks, [&](size_t task) { ++runs[s][task]; });
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  for (const auto& per_task : runs) {
    for (int count : per_task) CHECK(count == int(kJobs));
  }
}

TEST_CASE("cpu gather and scatter and zeroAt move elements of every width", "[kernels][indexed]") {
  KernelSettingsGuard guard;
  const size_t n = 100000;
  for (scclDataType_t dtype : {scclUint8, scclFloat16, scclFloat32, scclInt64}) {
    const size_t width = sccl::dataTypeSize(dtype);
    std::vector<unsigned char> src(n * width);
    for (size_t b = 0; b < src.size(); ++b) src[b] = static_cast<unsigned char>(mix(3, b));
    std::vector<int64_t> idx;  // every 3rd element, then a few repeats at the end
    for (size_t i = 0; i < n; i += 3) idx.push_back(int64_t(i));
    for (int64_t repeat : {int64_t(0), int64_t(n / 2), int64_t(0)}) idx.push_back(repeat);
    for (int parts : kPartCounts) {
      sccl::setKernelPartsForTesting(parts);
      INFO(sccl::dataTypeName(dtype) << " parts " << parts);
      std::vector<unsigned char> gathered(idx.size() * width);
      REQUIRE(sccl::cpuKernels().gather(src.data(), dtype, idx.data(), idx.size(), gathered.data(),
                                        nullptr) == scclSuccess);
      std::vector<unsigned char> want_gathered;
      for (int64_t i : idx)
        want_gathered.insert(want_gathered.end(), &src[i * width], &src[(i + 1) * width]);
      CHECK(gathered == want_gathered);

      // Scatter distinct values; for a repeated index the last entry must win.
      std::vector<unsigned char> vals(idx.size() * width);
      for (size_t b = 0; b < vals.size(); ++b) vals[b] = static_cast<unsigned char>(mix(4, b) | 1);
      std::vector<unsigned char> dst(n * width, 0), want_dst(n * width, 0);
      for (size_t j = 0; j < idx.size(); ++j)
        std::memcpy(&want_dst[idx[j] * width], &vals[j * width], width);
      REQUIRE(sccl::cpuKernels().scatter(dst.data(), dtype, idx.data(), vals.data(), idx.size(),
                                         nullptr) == scclSuccess);
      CHECK(dst == want_dst);

      REQUIRE(sccl::cpuKernels().zeroAt(dst.data(), dtype, idx.data(), idx.size(), nullptr) ==
              scclSuccess);
      CHECK(std::all_of(dst.begin(), dst.end(), [](unsigned char b) { return b == 0; }));
    }
  }
}

TEST_CASE("cpu absMoments: exact counts and extremes and sums identical on every ISA and split",
          "[kernels][moments][isa]") {
  KernelSettingsGuard guard;
  const size_t n = 300007;  // several 64K chunks and a ragged tail
  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
    // No infinities, so that the sums stay finite and are checked.
    const auto data = makeData(dtype, n, 77 + dtype, false);
    for (double floor : {0.0, 3.0}) {
      // Reference: counts and extremes are exact; sums in long double agree to rounding.
      sccl::AbsMoments want;
      long double sum_abs = 0, sum_sq = 0, sum_log = 0;
      want.min_abs = INFINITY;
      for (size_t i = 5; i < n - 2; ++i) {
        long double a = std::fabs(exactValue(dtype, data.data(), i));
        if (std::isnan(a)) ++want.nan_count;
        if (!(a >= floor)) continue;
        ++want.count;
        sum_abs += a;
        sum_sq += a * a;
        if (a == 0) ++want.zero_count;
        if (a > 0) sum_log += std::log(double(a));
        want.max_abs = std::max(want.max_abs, double(a));
        want.min_abs = std::min(want.min_abs, double(a));
      }
      std::vector<sccl::AbsMoments> results;
      for (CpuIsa isa : supportedIsas()) {
        sccl::setCpuIsaForTesting(isa);
        for (int parts : kPartCounts) {
          sccl::setKernelPartsForTesting(parts);
          sccl::AbsMoments got;
          REQUIRE(sccl::cpuKernels().absMoments(data.data(), dtype, 5, n - 2, floor, true, &got,
                                                nullptr) == scclSuccess);
          results.push_back(got);
        }
      }
      INFO(sccl::dataTypeName(dtype) << " floor " << floor);
      const sccl::AbsMoments& first = results.front();
      CHECK(first.count == want.count);
      CHECK(first.nan_count == want.nan_count);
      CHECK(first.zero_count == want.zero_count);
      CHECK(first.max_abs == want.max_abs);
      CHECK(first.min_abs == want.min_abs);
      CHECK(first.sum_abs == Approx(double(sum_abs)).epsilon(1e-12));
      CHECK(first.sum_sq == Approx(double(sum_sq)).epsilon(1e-12));
      CHECK(first.sum_log == Approx(double(sum_log)).epsilon(1e-9));
      for (const sccl::AbsMoments& r : results) {
        CHECK(std::memcmp(&r, &first, sizeof(r)) == 0);
      }
    }
  }
  sccl::AbsMoments empty;
  REQUIRE(sccl::cpuKernels().absMoments(nullptr, scclFloat32, 0, 0, 0.0, true, &empty, nullptr) ==
          scclSuccess);
  CHECK(empty.count == 0);
  CHECK(empty.min_abs == 0);
}

TEST_CASE("cpu backend names the instruction set in use", "[kernels][isa]") {
  KernelSettingsGuard guard;
  for (CpuIsa isa : supportedIsas()) {
    sccl::setCpuIsaForTesting(isa);
    CHECK(std::string(sccl::cpuKernels().name()) == std::string("cpu-") + sccl::cpuIsaName(isa));
  }
}
