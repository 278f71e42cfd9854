// The NaN rule of the CPU kernels (docs/kernels.md, "NaN payloads"): an arithmetic result that is
// NaN is written as the canonical quiet NaN of its format, whatever payloads and signs its
// operands carry; a value that is only moved or converted keeps what kernels/shared/half.h makes of
// it. The CUDA backend writes the same patterns, so GPU results compare bit for bit with these
// (tests/gpu/test_gpu_kernels.cc). Inputs carry payload, negative and signalling NaNs
// (support/nan_patterns.h) next to finite values, at sizes that put them in the vector bodies and
// the scalar tails of every instruction set, and every check is on bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/shared/count_sketch.h"
#include "core/dtype.h"
#include "kernels/shared/half.h"
#include "kernels/kernels.h"
#include "support/nan_patterns.h"
#include "unit/cpu_kernel_test_data.h"

namespace {

using cpu_kernel_test::CpuIsa;
using cpu_kernel_test::exactValue;
using cpu_kernel_test::KernelSettingsGuard;
using cpu_kernel_test::supportedIsas;
using sccl_test::bitDifferences;
using sccl_test::canonicalNaNBits;
using sccl_test::payloadNaNBits;
using sccl_test::putBits;
using sccl_test::valueBits;
using Bytes = std::vector<unsigned char>;

struct Pair {
  scclDataType_t acc, grad;
};
constexpr Pair kPairs[] = {{scclFloat32, scclFloat32},
                           {scclFloat32, scclFloat16},
                           {scclFloat32, scclBfloat16},
                           {scclFloat64, scclFloat64}};

// Sizes with NaNs in the scalar tail only (below one vector), in whole vectors of 8 and 16 lanes,
// and in both with parts.
constexpr size_t kSizes[] = {1, 5, 8, 13, 16, 31, 64, 1001, 150001};

// The rule, computed independently of the kernels: the exact sum in acc's type, canonical if NaN.
Bytes expectedSums(Pair pair, const Bytes& residual, const Bytes& grad, size_t n) {
  Bytes want(n * sccl::dataTypeSize(pair.acc));
  for (size_t i = 0; i < n; ++i) {
    const long double r = exactValue(pair.acc, residual.data(), i);
    const long double g = exactValue(pair.grad, grad.data(), i);
    const double sum =
        pair.acc == scclFloat64 ? double(r) + double(g) : double(float(r) + float(g));
    putBits(pair.acc, want.data(), i,
            std::isnan(sum) ? canonicalNaNBits(pair.acc) : valueBits(pair.acc, sum));
  }
  return want;
}

}  // namespace

TEST_CASE("nan rule: accumulate writes the canonical NaN on every ISA, body and tail",
          "[nan_rule][accumulate][isa]") {
  KernelSettingsGuard guard;
  for (Pair pair : kPairs) {
    for (size_t n : kSizes) {
      Bytes residual, grad;
      sccl_test::nanSumOperands(pair.acc, pair.grad, n, &residual, &grad);
      const Bytes want = expectedSums(pair, residual, grad, n);
      for (CpuIsa isa : supportedIsas()) {
        sccl::setCpuIsaForTesting(isa);
        for (int parts : {0, 3}) {
          sccl::setKernelPartsForTesting(parts);
          INFO(sccl::dataTypeName(pair.acc)
               << " + " << sccl::dataTypeName(pair.grad) << ", n " << n << ", "
               << sccl::cpuIsaName(isa) << ", parts " << parts);
          Bytes acc(want.size(), 0xCD);
          REQUIRE(sccl::cpuKernels().accumulate(acc.data(), residual.data(), pair.acc, grad.data(),
                                                pair.grad, n, nullptr, nullptr) == scclSuccess);
          CHECK(bitDifferences(pair.acc, want.data(), acc.data(), n) == "");
          Bytes in_place = residual;  // acc == residual: the same results
          REQUIRE(sccl::cpuKernels().accumulate(in_place.data(), in_place.data(), pair.acc,
                                                grad.data(), pair.grad, n, nullptr,
                                                nullptr) == scclSuccess);
          CHECK(bitDifferences(pair.acc, want.data(), in_place.data(), n) == "");
        }
      }
    }
  }
}

TEST_CASE("nan rule: accumulate without a residual moves the gradient's NaN bits",
          "[nan_rule][accumulate][isa]") {
  // No addition, so no arithmetic result: float32/float64 NaNs are copied as they are (payload,
  // sign, signalling bit), 16-bit ones widened by kernels/shared/half.h (F16C's quieting for
  // float16).
  KernelSettingsGuard guard;
  for (Pair pair : kPairs) {
    const size_t n = 45;
    Bytes grad(n * sccl::dataTypeSize(pair.grad));
    Bytes want(n * sccl::dataTypeSize(pair.acc));
    for (size_t i = 0; i < n; ++i) {
      const uint64_t g = payloadNaNBits(pair.grad, i);
      putBits(pair.grad, grad.data(), i, g);
      uint64_t widened = g;
      if (pair.grad == scclFloat16)
        widened = sccl::floatToBits(sccl::fp16ToFloatQuiet(uint16_t(g)));
      if (pair.grad == scclBfloat16) widened = g << 16;
      putBits(pair.acc, want.data(), i, widened);
    }
    for (CpuIsa isa : supportedIsas()) {
      sccl::setCpuIsaForTesting(isa);
      INFO(sccl::dataTypeName(pair.grad) << ", " << sccl::cpuIsaName(isa));
      Bytes acc(want.size());
      REQUIRE(sccl::cpuKernels().accumulate(acc.data(), nullptr, pair.acc, grad.data(), pair.grad,
                                            n, nullptr, nullptr) == scclSuccess);
      CHECK(bitDifferences(pair.acc, want.data(), acc.data(), n) == "");
    }
  }
}

TEST_CASE("nan rule: scaled scatterValues writes the canonical NaN, a unit scale moves bits",
          "[nan_rule][scatter_values]") {
  KernelSettingsGuard guard;
  const size_t n = 40000, size = 2 * n + 3;  // above 16K indices: the destination split runs
  std::vector<int64_t> idx(n);
  for (size_t j = 0; j < n; ++j) idx[j] = int64_t(2 * j + 1);
  for (scclDataType_t val_dtype : {scclFloat32, scclFloat64}) {
    Bytes vals(n * sccl::dataTypeSize(val_dtype));
    for (size_t j = 0; j < n; ++j) {
      putBits(val_dtype, vals.data(), j,
              j % 3 == 0 ? payloadNaNBits(val_dtype, j / 3) : valueBits(val_dtype, double(j % 7)));
    }
    const std::vector<scclDataType_t> dsts =
        val_dtype == scclFloat64
            ? std::vector<scclDataType_t>{scclFloat64}
            : std::vector<scclDataType_t>{scclFloat32, scclFloat16, scclBfloat16};
    for (scclDataType_t dst_dtype : dsts) {
      for (double scale : {0.5, 1.0}) {
        Bytes want(size * sccl::dataTypeSize(dst_dtype), 0);
        for (size_t j = 0; j < n; ++j) {
          const uint64_t v = sccl_test::getBits(val_dtype, vals.data(), j);
          const long double value = exactValue(val_dtype, vals.data(), j);
          uint64_t bits = valueBits(dst_dtype, double(value) * scale);
          if (std::isnan(value)) {
            // Scaled: arithmetic, canonical. Unit scale: a copy (same type) keeps every bit, a
            // narrowing is kernels/shared/half.h's conversion of the value as it is.
            bits = scale != 1.0               ? canonicalNaNBits(dst_dtype)
                   : dst_dtype == val_dtype   ? v
                   : dst_dtype == scclFloat16 ? sccl::floatToFp16(sccl::bitsToFloat(uint32_t(v)))
                                              : sccl::floatToBf16(sccl::bitsToFloat(uint32_t(v)));
          }
          putBits(dst_dtype, want.data(), size_t(idx[j]), bits);
        }
        for (int parts : {0, 3}) {
          sccl::setKernelPartsForTesting(parts);
          INFO(sccl::dataTypeName(val_dtype) << " into " << sccl::dataTypeName(dst_dtype)
                                             << ", scale " << scale << ", parts " << parts);
          Bytes dst(want.size(), 0);
          REQUIRE(sccl::cpuKernels().scatterValues(dst.data(), dst_dtype, idx.data(), vals.data(),
                                                   val_dtype, n, scale, nullptr) == scclSuccess);
          CHECK(bitDifferences(dst_dtype, want.data(), dst.data(), size) == "");
        }
      }
    }
  }
}

namespace {

// Counts the NaN elements of a raw array and whether every one of them is canonical.
struct NaNCensus {
  size_t nans = 0, non_canonical = 0;
};

NaNCensus censusOf(scclDataType_t dtype, const void* data, size_t n) {
  NaNCensus census;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isnan(exactValue(dtype, static_cast<const unsigned char*>(data), i))) continue;
    ++census.nans;
    census.non_canonical += sccl_test::getBits(dtype, data, i) != canonicalNaNBits(dtype);
  }
  return census;
}

}  // namespace

TEST_CASE("nan rule: the count-sketch kernels write canonical NaNs", "[nan_rule][sketch]") {
  const sccl::KernelBackend& kernels = sccl::cpuKernels();
  for (scclDataType_t dtype : {scclFloat32, scclFloat64}) {
    for (uint32_t rows : {1u, 2u, 3u}) {
      const size_t n = 997, width = sccl::dataTypeSize(dtype);
      std::vector<uint64_t> keys(rows);
      for (uint32_t j = 0; j < rows; ++j) keys[j] = sccl::sketchRowKey(7, j);
      sccl::SketchShape shape;
      shape.count = n;
      shape.block = 10;
      shape.rows = rows;
      shape.width = 257;
      shape.row_keys = keys.data();
      Bytes x(n * width);
      for (size_t i = 0; i < n; ++i) {
        putBits(dtype, x.data(), i,
                i % 41 == 3 ? payloadNaNBits(dtype, i) : valueBits(dtype, double(i % 9) - 4.0));
      }
      INFO(sccl::dataTypeName(dtype) << ", " << rows << " rows");

      std::vector<double> sq(shape.blocks());
      REQUIRE(kernels.blockSquaredNorms(x.data(), dtype, n, shape.block, sq.data(), nullptr) ==
              scclSuccess);
      const NaNCensus norms = censusOf(scclFloat64, sq.data(), sq.size());
      CHECK(norms.nans > 10);
      CHECK(norms.non_canonical == 0);

      Bytes table(rows * shape.width * width, 0);
      REQUIRE(kernels.sketchEncode(x.data(), dtype, shape, nullptr, table.data(),
                                   sccl::kListedUnknown, nullptr) == scclSuccess);
      const NaNCensus buckets = censusOf(dtype, table.data(), rows * shape.width);
      CHECK(buckets.nans > 10);
      CHECK(buckets.non_canonical == 0);

      // Decode from a table whose NaNs carry payloads and signs (a table all-reduced elsewhere),
      // so the negation of a row's sign and the median must not leak them.
      for (size_t b = 0; b < rows * shape.width; b += 5) {
        putBits(dtype, table.data(), b, payloadNaNBits(dtype, b));
      }
      const std::vector<scclDataType_t> outs =
          dtype == scclFloat64
              ? std::vector<scclDataType_t>{scclFloat64}
              : std::vector<scclDataType_t>{scclFloat32, scclFloat16, scclBfloat16};
      for (scclDataType_t out_dtype : outs) {
        for (uint32_t divisor : {1u, 3u}) {
          INFO("decode to " << sccl::dataTypeName(out_dtype) << ", divisor " << divisor);
          Bytes out(n * sccl::dataTypeSize(out_dtype));
          REQUIRE(kernels.sketchDecode(table.data(), dtype, shape, nullptr, divisor, out.data(),
                                       out_dtype, nullptr) == scclSuccess);
          const NaNCensus decoded = censusOf(out_dtype, out.data(), n);
          CHECK(decoded.nans > 10);
          CHECK(decoded.non_canonical == 0);
        }
      }

      Bytes residual = x;
      REQUIRE(kernels.updateMarkedBlocks(residual.data(), dtype, n, shape.block, nullptr, x.data(),
                                         nullptr) == scclSuccess);
      const NaNCensus updated = censusOf(dtype, residual.data(), n);
      CHECK(updated.nans > 10);
      CHECK(updated.non_canonical == 0);
    }
  }
}
