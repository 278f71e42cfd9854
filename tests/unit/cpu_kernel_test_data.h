// Test data and settings shared by the CPU kernel tests (test_cpu_kernels*.cc): seeded values
// with NaN, infinities, zeros and subnormals in every floating dtype, the exact value of an
// element, the ISAs this processor supports and the part counts every kernel is run with.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace cpu_kernel_test {

using sccl::CpuIsa;
inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Restores the process-wide ISA and part-count settings when a test leaves.
struct KernelSettingsGuard {
  CpuIsa isa = sccl::activeCpuIsa();
  int parts = sccl::setKernelPartsForTesting(0);
  KernelSettingsGuard() { sccl::setKernelPartsForTesting(parts); }
  ~KernelSettingsGuard() {
    sccl::setCpuIsaForTesting(isa);
    sccl::setKernelPartsForTesting(parts);
  }
};

inline std::vector<CpuIsa> supportedIsas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (sccl::cpuIsaSupported(isa)) isas.push_back(isa);
  }
  return isas;
}

// Part counts to try: 0 is the automatic rule; odd counts leave uneven parts and tails.
inline constexpr int kPartCounts[] = {0, 1, 2, 3, 7};

inline uint64_t mix(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Laplace-like values with a sprinkling of NaN, zeros, subnormals and (optionally) infinities.
inline double sampleValue(uint64_t seed, size_t i, bool with_infinities) {
  uint64_t r = mix(seed, i);
  switch (r % 997) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return -std::numeric_limits<double>::quiet_NaN();
    case 2:
      if (with_infinities) return (r & 1024) ? INFINITY : -INFINITY;
      return 1.0;
    case 3: return 0.0;
    case 4: return -0.0;
    case 5: return 1e-41;  // float subnormal, fp16/bf16 zero or subnormal
    default: break;
  }
  double u = double((r >> 11) | 1) * 0x1.0p-53;  // (0, 1)
  return ((r & 2048) ? -1.0 : 1.0) * -std::log(u);
}

// Stores v rounded to the dtype (to nearest even, as kernels/shared/half.h does for the 16-bit
// types).
inline void storeValue(scclDataType_t dtype, unsigned char* at, double v) {
  if (dtype == scclFloat64) {
    std::memcpy(at, &v, 8);
  } else if (dtype == scclFloat32) {
    float f = float(v);
    std::memcpy(at, &f, 4);
  } else {
    uint16_t h = dtype == scclFloat16 ? sccl::floatToFp16(float(v)) : sccl::floatToBf16(float(v));
    std::memcpy(at, &h, 2);
  }
}

inline std::vector<unsigned char> encodeValues(scclDataType_t dtype,
                                               const std::vector<double>& values) {
  std::vector<unsigned char> data(values.size() * sccl::dataTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    storeValue(dtype, data.data() + i * sccl::dataTypeSize(dtype), values[i]);
  }
  return data;
}

inline std::vector<unsigned char> makeData(scclDataType_t dtype, size_t n, uint64_t seed,
                                           bool with_infinities = true) {
  std::vector<unsigned char> data(n * sccl::dataTypeSize(dtype));
  for (size_t i = 0; i < n; ++i) {
    storeValue(dtype, data.data() + i * sccl::dataTypeSize(dtype),
               sampleValue(seed, i, with_infinities));
  }
  return data;
}

// The element as a long double: exact for all four types.
inline long double exactValue(scclDataType_t dtype, const unsigned char* data, size_t i) {
  const unsigned char* at = data + i * sccl::dataTypeSize(dtype);
  if (dtype == scclFloat64) {
    double v;
    std::memcpy(&v, at, 8);
    return v;
  }
  if (dtype == scclFloat32) {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, at, 2);
  return dtype == scclFloat16 ? sccl::fp16ToFloat(h) : sccl::bf16ToFloat(h);
}

}  // namespace cpu_kernel_test
