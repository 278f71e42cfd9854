// Helpers of the CUDA kernels: launch shapes, and typed loads and stores of the four floating
// types through the shared conversions of kernels/shared/half.h (the CPU backend's own).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/shared/half.h"
#include "kernels/shared/canonical_nan.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl::cuda_kernels {

constexpr unsigned kThreads = 256;

// Grid-stride loops: enough blocks to fill the device, never more than the work needs.
inline unsigned gridFor(size_t n) {
  size_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  return blocks == 0 ? 1u : static_cast<unsigned>(blocks);
}

// The sticky fault word of the calls that read nothing back
// (kernels/shared/sync_free_async_fault.h): one store to pinned host memory from one thread, made
// visible to the host before the kernel ends. Only the first fault is kept (the word is sticky
// until scclSparsifierReset).
__device__ inline void raiseFault(uint64_t* fault_word, uint64_t word) {
  volatile uint64_t* fault = fault_word;
  if (word == 0 || *fault != 0) return;
  *fault = word;
  __threadfence_system();
}

__device__ inline size_t globalThread() {
  return size_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline size_t gridThreads() {
  return size_t(gridDim.x) * blockDim.x;
}

// Bit patterns of 2, 4 and 8 bytes.
template <size_t kBytes>
struct BitsOf;
template <>
struct BitsOf<2> {
  using type = uint16_t;
};
template <>
struct BitsOf<4> {
  using type = uint32_t;
};
template <>
struct BitsOf<8> {
  using type = uint64_t;
};

// A float32 value stored as dst_dtype, rounded to nearest even (kernels/shared/half.h).
__device__ inline void storeFloat(void* dst, scclDataType_t dtype, size_t i, float v) {
  switch (dtype) {
    case scclFloat16: static_cast<uint16_t*>(dst)[i] = floatToFp16(v); break;
    case scclBfloat16: static_cast<uint16_t*>(dst)[i] = floatToBf16(v); break;
    default: static_cast<float*>(dst)[i] = v; break;
  }
}

__device__ inline bool nonFinite(float v) {
  return (floatToBits(v) & 0x7f800000u) == 0x7f800000u;
}

__device__ inline bool nonFinite(double v) {
  return (__double_as_longlong(v) & 0x7ff0000000000000ll) == 0x7ff0000000000000ll;
}

}  // namespace sccl::cuda_kernels
