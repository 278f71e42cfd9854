// float16 / bfloat16 <-> float32 conversions, bit-exact and round-to-nearest-even, shared by the
// host code and the CUDA kernels (cuda/) so that both backends round identically.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/shared/host_device.h"

namespace sccl {

SCCL_HOST_DEVICE inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

SCCL_HOST_DEVICE inline uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

SCCL_HOST_DEVICE inline float bf16ToFloat(uint16_t h) {
  return bitsToFloat(uint32_t(h) << 16);
}

// Round to nearest even; NaN stays NaN (quiet), infinities stay infinite.
SCCL_HOST_DEVICE inline uint16_t floatToBf16(float f) {
  uint32_t bits = floatToBits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x0040u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

SCCL_HOST_DEVICE inline float fp16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    if (mantissa == 0) return bitsToFloat(sign);  // signed zero
    // Subnormal: value = mantissa * 2^-24, exact in float.
    float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// The widening of a gradient element: F16C turns a signalling NaN into a quiet one, so every
// path (scalar, vector, CUDA) does the same and a copy is bitwise identical on all of them.
SCCL_HOST_DEVICE inline float fp16ToFloatQuiet(uint16_t h) {
  uint32_t bits = floatToBits(fp16ToFloat(h));
  if ((bits & 0x7fffffffu) > 0x7f800000u) bits |= 0x00400000u;
  return bitsToFloat(bits);
}

// Round to nearest even, overflow to infinity, NaN stays NaN.
SCCL_HOST_DEVICE inline uint16_t floatToFp16(float f) {
  uint32_t bits = floatToBits(f);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (abs_bits >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (abs_bits < 0x38800000u) {                                  // subnormal or 0
    // value / 2^-24 rounded to nearest even gives the subnormal mantissa.
    float magnitude = bitsToFloat(abs_bits) * 16777216.0f;  // exact scaling by 2^24
    uint32_t q = uint32_t(magnitude);
    float frac = magnitude - float(q);
    if (frac > 0.5f || (frac == 0.5f && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t rounding = 0xfffu + ((abs_bits >> 13) & 1u);
  abs_bits += rounding;
  return uint16_t(sign | ((abs_bits >> 13) - (112u << 10)));
}

}  // namespace sccl
