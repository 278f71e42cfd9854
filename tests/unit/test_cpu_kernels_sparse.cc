// The CPU kernels of the sparse all-reduce's dense side: the out-of-place accumulate with its
// fused non-finite count, the converting scatter into the dense output, and fillZero; each
// checked against a plain reference on every instruction set and split into parts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"
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
using cpu_kernel_test::supportedIsas;
using Bytes = std::vector<unsigned char>;

struct AccumulatePair {
  scclDataType_t acc, grad;
};
constexpr AccumulatePair kAccumulatePairs[] = {{scclFloat32, scclFloat32},
                                               {scclFloat32, scclFloat16},
                                               {scclFloat32, scclBfloat16},
                                               {scclFloat64, scclFloat64}};

enum class ResidualMode { Separate, InPlace, None };

// One IEEE addition in acc's type with the grad widened exactly (just the widened grad without
// a residual); a NaN sum is the canonical NaN (quiet_NaN, the NaN rule of docs/kernels.md);
// *nonfinite counts NaN and infinite results.
Bytes referenceAccumulate(AccumulatePair pair, const unsigned char* residual, const Bytes& grad,
                          size_t n, uint64_t* nonfinite) {
  Bytes want(n * sccl::dataTypeSize(pair.acc));
  *nonfinite = 0;
  for (size_t i = 0; i < n; ++i) {
    double sum;
    if (pair.acc == scclFloat32) {
      float g = float(exactValue(pair.grad, grad.data(), i));
      float s = residual ? float(exactValue(scclFloat32, residual, i)) + g : g;
      if (residual && std::isnan(s)) s = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(&want[4 * i], &s, 4);
      sum = s;
    } else {
      double g = double(exactValue(scclFloat64, grad.data(), i));
      sum = residual ? double(exactValue(scclFloat64, residual, i)) + g : g;
      if (residual && std::isnan(sum)) sum = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(&want[8 * i], &sum, 8);
    }
    *nonfinite += std::isfinite(sum) ? 0 : 1;
  }
  return want;
}

// Elements that differ in value (any NaN matches any NaN).
size_t valueMismatches(scclDataType_t dtype, const Bytes& got, const Bytes& want, size_t n) {
  size_t differing = 0;
  for (size_t i = 0; i < n; ++i) {
    long double g = exactValue(dtype, got.data(), i), w = exactValue(dtype, want.data(), i);
    differing += (std::isnan(w) ? std::isnan(g) : g == w) ? 0 : 1;
  }
  return differing;
}

// Elements whose bits differ.
size_t bitMismatches(size_t width, const Bytes& a, const Bytes& b, size_t n) {
  size_t differing = 0;
  for (size_t i = 0; i < n; ++i) differing += std::memcmp(&a[i * width], &b[i * width], width) != 0;
  return differing;
}

void checkAccumulatePair(AccumulatePair pair, ResidualMode mode) {
  const size_t n = 150001;  // odd: parts and vectors leave tails
  const size_t width = sccl::dataTypeSize(pair.acc);
  const Bytes residual = makeData(pair.acc, n, 1);
  const Bytes grad = makeData(pair.grad, n, 2);
  const bool with_residual = mode != ResidualMode::None;
  uint64_t want_nonfinite = 0;
  const Bytes want = referenceAccumulate(pair, with_residual ? residual.data() : nullptr, grad, n,
                                         &want_nonfinite);
  REQUIRE(want_nonfinite > 100);
  Bytes first;
  for (CpuIsa isa : supportedIsas()) {
    sccl::setCpuIsaForTesting(isa);
    for (int parts : kPartCounts) {
      sccl::setKernelPartsForTesting(parts);
      INFO(sccl::dataTypeName(pair.grad)
           << " mode " << int(mode) << " isa " << sccl::cpuIsaName(isa) << " parts " << parts);
      Bytes acc = mode == ResidualMode::InPlace ? residual : Bytes(n * width, 0xCD);
      const void* from = mode == ResidualMode::Separate  ? residual.data()
                         : mode == ResidualMode::InPlace ? acc.data()
                                                         : nullptr;
      uint64_t nonfinite = ~uint64_t{0};
      REQUIRE(sccl::cpuKernels().accumulate(acc.data(), from, pair.acc, grad.data(), pair.grad, n,
                                            &nonfinite, nullptr) == scclSuccess);
      CHECK(nonfinite == want_nonfinite);
      CHECK(valueMismatches(pair.acc, acc, want, n) == 0);
      // With a residual every element is a sum: its bits are the reference's, NaNs canonical.
      if (with_residual) CHECK(bitMismatches(width, want, acc, n) == 0);
      // Every ISA and split writes the same bits (no NaN is exempt).
      if (first.empty()) first = acc;
      CHECK(bitMismatches(width, first, acc, n) == 0);
    }
  }
}

template <typename T>
Bytes asBytes(const std::vector<T>& values) {
  Bytes bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Runs accumulate on every ISA and requires the same non-finite count and result bits.
void checkNonFinite(AccumulatePair pair, const Bytes& residual, const Bytes& grad, size_t n,
                    uint64_t want_nonfinite) {
  KernelSettingsGuard guard;
  Bytes first;
  for (CpuIsa isa : supportedIsas()) {
    sccl::setCpuIsaForTesting(isa);
    INFO(sccl::dataTypeName(pair.grad) << " isa " << sccl::cpuIsaName(isa));
    Bytes acc(n * sccl::dataTypeSize(pair.acc));
    uint64_t nonfinite = 12345;
    REQUIRE(sccl::cpuKernels().accumulate(acc.data(), residual.empty() ? nullptr : residual.data(),
                                          pair.acc, grad.data(), pair.grad, n, &nonfinite,
                                          nullptr) == scclSuccess);
    CHECK(nonfinite == want_nonfinite);
    if (first.empty()) first = acc;
    CHECK(acc == first);
    // The count is optional.
    REQUIRE(sccl::cpuKernels().accumulate(acc.data(), residual.empty() ? nullptr : residual.data(),
                                          pair.acc, grad.data(), pair.grad, n, nullptr,
                                          nullptr) == scclSuccess);
    CHECK(acc == first);
  }
}

}  // namespace

TEST_CASE("cpu accumulate: residual plus widened grad is identical on every ISA and split",
          "[kernels][accumulate][isa]") {
  KernelSettingsGuard guard;
  for (AccumulatePair pair : kAccumulatePairs) {
    for (ResidualMode mode : {ResidualMode::Separate, ResidualMode::InPlace, ResidualMode::None}) {
      checkAccumulatePair(pair, mode);
    }
  }
}

TEST_CASE("cpu accumulate: NaN and infinite results are counted in vector bodies and tails",
          "[kernels][accumulate][isa]") {
  const size_t n = 53;  // vectors of 8 and 16 plus a tail
  std::vector<float> residual(n, 1.5f), grad(n, -0.25f);
  residual[0] = FLT_MAX, grad[0] = FLT_MAX;                       // overflows to +inf
  residual[7] = INFINITY, grad[7] = -INFINITY;                    // inf - inf = NaN
  residual[8] = -FLT_MAX, grad[8] = FLT_MAX;                      // 0: finite
  residual[16] = std::nanf(""), grad[16] = 0.0f;                  // NaN stays NaN
  residual[33] = 1e-45f, grad[33] = -0.0f;                        // subnormal: finite
  residual[50] = -INFINITY, grad[50] = 1.0f;                      // -inf
  residual[52] = FLT_MAX, grad[52] = std::nextafter(FLT_MAX, 0);  // rounds to +inf
  checkNonFinite({scclFloat32, scclFloat32}, asBytes(residual), asBytes(grad), n, 5);

  std::vector<uint16_t> half(n, 0x3c00);                                      // fp16 1.0
  half[3] = 0x7c00, half[20] = 0xfc00, half[51] = 0x7e00, half[40] = 0x7bff;  // inf, -inf, NaN, max
  checkNonFinite({scclFloat32, scclFloat16}, {}, asBytes(half), n, 3);
  std::vector<float> big(n, 0.0f);
  big[40] = FLT_MAX;  // finite fp16 max + FLT_MAX stays finite
  checkNonFinite({scclFloat32, scclFloat16}, asBytes(big), asBytes(half), n, 3);

  std::vector<uint16_t> brain(n, 0x3f80);                      // bf16 1.0
  brain[15] = 0x7f80, brain[31] = 0xffc1, brain[49] = 0x7f7f;  // inf, NaN, bf16 max
  checkNonFinite({scclFloat32, scclBfloat16}, {}, asBytes(brain), n, 2);
  big[49] = FLT_MAX;  // FLT_MAX + bf16 max overflows
  checkNonFinite({scclFloat32, scclBfloat16}, asBytes(big), asBytes(brain), n, 3);

  std::vector<double> r64(n, 2.0), g64(n, 0.5);
  r64[4] = DBL_MAX, g64[4] = DBL_MAX;
  r64[9] = -INFINITY;
  g64[44] = std::nan("");
  checkNonFinite({scclFloat64, scclFloat64}, asBytes(r64), asBytes(g64), n, 3);

  uint64_t nonfinite = 99;
  float unused = 0;
  REQUIRE(sccl::cpuKernels().accumulate(&unused, &unused, scclFloat32, &unused, scclFloat32, 0,
                                        &nonfinite, nullptr) == scclSuccess);
  CHECK(nonfinite == 0);
}

TEST_CASE("cpu accumulate: a float16 signalling NaN widens to the same quiet NaN on every ISA",
          "[kernels][accumulate][isa]") {
  KernelSettingsGuard guard;
  const std::vector<uint16_t> grad(37, 0x7c01);  // signalling NaN, payload 1
  for (CpuIsa isa : supportedIsas()) {
    sccl::setCpuIsaForTesting(isa);
    std::vector<uint32_t> acc(grad.size());
    REQUIRE(sccl::cpuKernels().accumulate(acc.data(), nullptr, scclFloat32, grad.data(),
                                          scclFloat16, grad.size(), nullptr,
                                          nullptr) == scclSuccess);
    INFO(sccl::cpuIsaName(isa));
    CHECK(std::all_of(acc.begin(), acc.end(), [](uint32_t bits) { return bits == 0x7fc02000u; }));
  }
}

TEST_CASE("cpu accumulate: unsupported dtype pairs are rejected", "[kernels][accumulate]") {
  float acc = 0;
  uint16_t g = 0;
  const auto& kernels = sccl::cpuKernels();
  CHECK(kernels.accumulate(&acc, nullptr, scclFloat16, &g, scclFloat16, 1, nullptr, nullptr) ==
        scclInvalidArgument);
  CHECK(kernels.accumulate(&acc, nullptr, scclFloat32, &g, scclFloat64, 1, nullptr, nullptr) ==
        scclInvalidArgument);
  CHECK(kernels.accumulate(&acc, nullptr, scclFloat64, &g, scclFloat32, 1, nullptr, nullptr) ==
        scclInvalidArgument);
}

namespace {

// dst[idx[j]] = convert(vals[j] * scale) by the contract: float32 values multiplied in float32 by
// (float)scale (not at all when that is 1), float64 values in double; a NaN product canonical.
Bytes referenceScatterValues(Bytes dst, scclDataType_t dst_dtype, const std::vector<int64_t>& idx,
                             const Bytes& vals, scclDataType_t val_dtype, double scale) {
  const size_t width = sccl::dataTypeSize(dst_dtype);
  for (size_t j = 0; j < idx.size(); ++j) {
    unsigned char* at = &dst[idx[j] * width];
    if (val_dtype == scclFloat64) {
      double v;
      std::memcpy(&v, &vals[8 * j], 8);
      if (scale != 1.0) v *= scale;
      if (scale != 1.0 && std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(at, &v, 8);
      continue;
    }
    float v;
    std::memcpy(&v, &vals[4 * j], 4);
    if (float(scale) != 1.0f) v *= float(scale);
    if (float(scale) != 1.0f && std::isnan(v)) v = std::numeric_limits<float>::quiet_NaN();
    if (dst_dtype == scclFloat32) std::memcpy(at, &v, 4);
    uint16_t h = dst_dtype == scclFloat16 ? sccl::floatToFp16(v) : sccl::floatToBf16(v);
    if (dst_dtype != scclFloat32) std::memcpy(at, &h, 2);
  }
  return dst;
}

}  // namespace

TEST_CASE("cpu scatterValues: scaled values rounded into every destination on every split",
          "[kernels][scatter_values][isa]") {
  KernelSettingsGuard guard;
  const size_t n = 100000;
  std::vector<int64_t> idx;  // distinct, descending, every third element
  for (size_t i = n; i >= 3; i -= 3) idx.push_back(int64_t(i - 1));
  struct Pair {
    scclDataType_t vals, dst;
  };
  for (Pair pair : {Pair{scclFloat32, scclFloat32}, Pair{scclFloat32, scclFloat16},
                    Pair{scclFloat32, scclBfloat16}, Pair{scclFloat64, scclFloat64}}) {
    const Bytes vals = makeData(pair.vals, idx.size(), 8);  // NaN, inf, zeros, subnormals
    const Bytes before(n * sccl::dataTypeSize(pair.dst), 0x5A);
    // 1/3 rounds in every dtype; 3e4 overflows float16; 1 + 1e-12 is 1 in float32.
    for (double scale : {1.0, 0.25, 1.0 / 3, 3e4, 1e-30, 1.0 + 1e-12}) {
      const Bytes want = referenceScatterValues(before, pair.dst, idx, vals, pair.vals, scale);
      for (CpuIsa isa : supportedIsas()) {
        sccl::setCpuIsaForTesting(isa);
        for (int parts : kPartCounts) {
          sccl::setKernelPartsForTesting(parts);
          INFO(sccl::dataTypeName(pair.vals) << " into " << sccl::dataTypeName(pair.dst)
                                             << " scale " << scale << " parts " << parts);
          Bytes dst = before;
          REQUIRE(sccl::cpuKernels().scatterValues(dst.data(), pair.dst, idx.data(), vals.data(),
                                                   pair.vals, idx.size(), scale,
                                                   nullptr) == scclSuccess);
          // A count, not the vectors: Catch would print all 100000 elements of each.
          CHECK(bitMismatches(sccl::dataTypeSize(pair.dst), want, dst, n) == 0);
        }
      }
    }
  }
}

TEST_CASE("cpu scatterValues: a unit scale copies bits exactly and signalling NaN included",
          "[kernels][scatter_values]") {
  const std::vector<uint32_t> f32 = {0x7f800001u, 0x80000000u, 0x00000001u, 0x7f7fffffu};
  const std::vector<uint64_t> f64 = {0x7ff0000000000001ull, 0x8000000000000000ull, 1ull};
  const std::vector<int64_t> idx = {3, 0, 2, 1};
  std::vector<uint32_t> dst32(4, 0);
  REQUIRE(sccl::cpuKernels().scatterValues(dst32.data(), scclFloat32, idx.data(), f32.data(),
                                           scclFloat32, 4, 1.0, nullptr) == scclSuccess);
  CHECK(dst32 == std::vector<uint32_t>{f32[1], f32[3], f32[2], f32[0]});
  std::vector<uint64_t> dst64(3, 0);
  REQUIRE(sccl::cpuKernels().scatterValues(dst64.data(), scclFloat64, idx.data() + 1, f64.data(),
                                           scclFloat64, 3, 1.0, nullptr) == scclSuccess);
  CHECK(dst64 == std::vector<uint64_t>{f64[0], f64[2], f64[1]});

  float value = 1;
  std::vector<uint16_t> half(1);
  const auto& kernels = sccl::cpuKernels();
  CHECK(kernels.scatterValues(half.data(), scclFloat64, idx.data(), &value, scclFloat32, 1, 1.0,
                              nullptr) == scclInvalidArgument);
  CHECK(kernels.scatterValues(half.data(), scclFloat32, idx.data(), &value, scclFloat64, 1, 1.0,
                              nullptr) == scclInvalidArgument);
  CHECK(kernels.scatterValues(half.data(), scclFloat16, idx.data(), &value, scclFloat16, 1, 1.0,
                              nullptr) == scclInvalidArgument);
}

TEST_CASE("cpu fillZero: zeroes exactly the bytes asked for on every split",
          "[kernels][fill_zero]") {
  KernelSettingsGuard guard;
  const size_t guard_bytes = 100;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4097}, size_t{3 << 20} + 13}) {
    for (size_t offset : {size_t{0}, size_t{3}}) {
      for (int parts : kPartCounts) {
        sccl::setKernelPartsForTesting(parts);
        INFO(bytes << " bytes at offset " << offset << " parts " << parts);
        Bytes buffer(offset + bytes + guard_bytes, 0xEE);
        REQUIRE(sccl::cpuKernels().fillZero(buffer.data() + offset, bytes, nullptr) == scclSuccess);
        size_t zeros = std::count(buffer.begin() + offset, buffer.begin() + offset + bytes, 0);
        CHECK(zeros == bytes);
        CHECK(std::count(buffer.begin(), buffer.end(), 0xEE) == long(offset + guard_bytes));
      }
    }
  }
}
