// NaN bit patterns with payloads, for the tests of the NaN rule (docs/kernels.md, "NaN payloads"):
// arithmetic results that are NaN must be the canonical NaN of their format, whatever the
// operands' payloads and signs, so the inputs here carry every kind of non-canonical NaN (payload
// bits, the sign bit, signalling NaNs, all ones). Elements are handled as raw bit patterns of
// their width, and results compared bit for bit (an isnan check could not tell two NaNs apart).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"
#include "kernels/shared/canonical_nan.h"

namespace sccl_test {

// The canonical quiet NaN of a floating dtype (0 for the others).
inline uint64_t canonicalNaNBits(scclDataType_t dtype) {
  switch (dtype) {
    case scclFloat16: return sccl::kCanonicalNaNFloat16;
    case scclBfloat16: return sccl::kCanonicalNaNBfloat16;
    case scclFloat32: return sccl::kCanonicalNaNFloat32;
    case scclFloat64: return sccl::kCanonicalNaNFloat64;
    default: return 0;
  }
}

// Non-canonical NaNs of a floating dtype: quiet with a payload, negative, signalling, all ones.
// `k` picks one (any k, cycling), so that neighbouring elements and ranks carry different ones.
inline uint64_t payloadNaNBits(scclDataType_t dtype, size_t k) {
  static const uint16_t fp16[] = {0x7e01, 0xfe00, 0x7c01, 0xffff, 0x7fff};
  static const uint16_t bf16[] = {0x7fc1, 0xffc0, 0x7f81, 0xffff, 0x7fff};
  static const uint32_t fp32[] = {0x7fc00001u, 0xffc00000u, 0x7f800001u, 0xffffffffu, 0x7fc12345u};
  static const uint64_t fp64[] = {0x7ff8000000000001ull, 0xfff8000000000000ull,
                                  0x7ff0000000000001ull, 0xffffffffffffffffull,
                                  0x7ff8000012345678ull};
  switch (dtype) {
    case scclFloat16: return fp16[k % 5];
    case scclBfloat16: return bf16[k % 5];
    case scclFloat32: return fp32[k % 5];
    default: return fp64[k % 5];
  }
}

inline void putBits(scclDataType_t dtype, void* base, size_t i, uint64_t bits) {
  const size_t width = sccl::dataTypeSize(dtype);
  std::memcpy(static_cast<unsigned char*>(base) + i * width, &bits, width);  // little-endian
}

inline uint64_t getBits(scclDataType_t dtype, const void* base, size_t i) {
  const size_t width = sccl::dataTypeSize(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const unsigned char*>(base) + i * width, width);
  return bits;
}

// The bit pattern of a (non-NaN) double rounded to a floating dtype by kernels/shared/half.h's
// rules.
inline uint64_t valueBits(scclDataType_t dtype, double value) {
  switch (dtype) {
    case scclFloat16: return sccl::floatToFp16(float(value));
    case scclBfloat16: return sccl::floatToBf16(float(value));
    case scclFloat32: return sccl::floatToBits(float(value));
    default: {
      uint64_t bits;
      std::memcpy(&bits, &value, 8);
      return bits;
    }
  }
}

// Operands of an addition with NaNs, for accumulate on either backend. Element i of a (acc_dtype)
// and b (b_dtype): both NaN with different payloads, one of them NaN, inf + -inf (a NaN that x86
// generates as 0xffc00000 and CUDA as 0x7fffffff), or finite.
inline void nanSumOperands(scclDataType_t a_dtype, scclDataType_t b_dtype, size_t n,
                           std::vector<unsigned char>* a, std::vector<unsigned char>* b) {
  a->assign(n * sccl::dataTypeSize(a_dtype), 0);
  b->assign(n * sccl::dataTypeSize(b_dtype), 0);
  for (size_t i = 0; i < n; ++i) {
    const double finite = double(int(i % 11) - 5) * 0.375;
    uint64_t x = valueBits(a_dtype, finite), y = valueBits(b_dtype, 1.5 - finite);
    switch (i % 6) {
      case 0:
        x = payloadNaNBits(a_dtype, i / 6);
        y = payloadNaNBits(b_dtype, i / 6 + 2);
        break;
      case 1: x = payloadNaNBits(a_dtype, i / 6 + 1); break;
      case 2: y = payloadNaNBits(b_dtype, i / 6 + 3); break;
      case 3:
        x = valueBits(a_dtype, INFINITY);
        y = valueBits(b_dtype, -INFINITY);
        break;
      default: break;
    }
    putBits(a_dtype, a->data(), i, x);
    putBits(b_dtype, b->data(), i, y);
  }
}

// "" when the n elements agree bit for bit, else how many differ and the first few with their
// index, expected and actual patterns (never the whole vector).
inline std::string bitDifferences(scclDataType_t dtype, const void* expected, const void* actual,
                                  size_t n) {
  size_t differing = 0;
  std::string lines;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t want = getBits(dtype, expected, i), got = getBits(dtype, actual, i);
    if (want == got) continue;
    if (differing++ < 4) {
      char line[96];
      std::snprintf(line, sizeof(line), " [%zu] expected 0x%llx actual 0x%llx", i,
                    static_cast<unsigned long long>(want), static_cast<unsigned long long>(got));
      lines += line;
    }
  }
  if (differing == 0) return "";
  return std::to_string(differing) + " of " + std::to_string(n) + " elements differ:" + lines;
}

}  // namespace sccl_test
