// What the GPU kernel tests share: raw element patterns of every floating type (Laplace values
// with zeros, -0, inf and NaN) and the CUDA backend they test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "kernels/shared/count_sketch.h"
#include "kernels/shared/half.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_gpu_test {

inline double laplace(uint64_t seed, size_t i) {
  uint64_t h = sccl::sketchMix(seed * 0x9E3779B97F4A7C15ull + i);
  double u = (double(h >> 11) + 0.5) / 9007199254740992.0;
  return ((h & 1) ? 1.0 : -1.0) * -std::log(u);
}

// Raw element patterns of a floating dtype: Laplace values, some zeros, -0, inf and NaN.
inline std::vector<uint8_t> elements(scclDataType_t dtype, size_t n, uint64_t seed,
                                     bool finite = false) {
  const size_t width = dtype == scclFloat64 ? 8 : dtype == scclFloat32 ? 4 : 2;
  std::vector<uint8_t> bytes(n * width);
  for (size_t i = 0; i < n; ++i) {
    double v = laplace(seed, i);
    if (i % 97 == 5) v = 0.0;
    if (i % 101 == 7) v = -0.0;
    if (!finite && i % 499 == 11) v = INFINITY;
    if (!finite && i % 503 == 13) v = NAN;
    uint64_t bits = 0;
    switch (dtype) {
      case scclFloat64: std::memcpy(&bits, &v, 8); break;
      case scclFloat32: bits = sccl::floatToBits(float(v)); break;
      case scclFloat16: bits = sccl::floatToFp16(float(v)); break;
      default: bits = sccl::floatToBf16(float(v)); break;
    }
    std::memcpy(bytes.data() + i * width, &bits, width);
  }
  return bytes;
}

inline const sccl::CudaKernels& gpu() {
  static sccl::CudaKernels kernels;
  return kernels;
}

}  // namespace sccl_gpu_test
