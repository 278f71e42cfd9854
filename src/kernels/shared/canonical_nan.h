// The NaN rule of every backend: an arithmetic result that is NaN is written as the canonical
// quiet NaN of its format; values that are only moved (gather, scatter, select, copies, the slot
// exchange) keep their bits, and conversions are those of kernels/shared/half.h.
//
// Why: IEEE 754 leaves the payload of a NaN result open. x86 returns the first NaN operand
// (quieted), or 0xffc00000 for an invalid operation such as inf - inf; CUDA returns 0x7fffffff
// for every NaN result. The library promises results bitwise the CPU's, so both backends write
// one pattern: std::numeric_limits<T>::quiet_NaN(), the pattern the non-finite policy already
// fills with (algorithms/call_header.cc) and RISC-V's canonical NaN. A canonical float32 NaN
// narrows to the canonical 16-bit one through kernels/shared/half.h (floatToFp16 -> 0x7e00,
// floatToBf16 -> 0x7fc0), so 16-bit results computed in float32 follow the rule too.
//
// One definition compiled by g++ (CPU kernels, transports, core/divide_by_ranks.cc) and nvcc
// (cuda/kernels/); the CPU's vector paths apply the same rule with a compare-unordered and a blend
// against these constants (kernels/cpu/accumulate.cc).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/shared/host_device.h"

namespace sccl {

inline constexpr uint32_t kCanonicalNaNFloat32 = 0x7fc00000u;
inline constexpr uint64_t kCanonicalNaNFloat64 = 0x7ff8000000000000ull;
inline constexpr uint16_t kCanonicalNaNFloat16 = 0x7e00u;
inline constexpr uint16_t kCanonicalNaNBfloat16 = 0x7fc0u;

// Copies of the constants, not their addresses: device code may use a host constexpr variable's
// value but not take its address.
SCCL_HOST_DEVICE inline float canonicalNaNFloat32() {
  const uint32_t bits = kCanonicalNaNFloat32;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

SCCL_HOST_DEVICE inline double canonicalNaNFloat64() {
  const uint64_t bits = kCanonicalNaNFloat64;
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// `value != value` is true exactly for NaN (no -ffast-math anywhere in the library); a branch-free
// select that compilers turn into a compare and a blend.
SCCL_HOST_DEVICE inline float canonicalizeNaN(float value) {
  return value != value ? canonicalNaNFloat32() : value;
}

SCCL_HOST_DEVICE inline double canonicalizeNaN(double value) {
  return value != value ? canonicalNaNFloat64() : value;
}

}  // namespace sccl
