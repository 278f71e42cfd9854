// One element of accumulate(): the gradient's loads (float16/bfloat16 widened exactly to float32)
// and acc[i] = residual[i] + grad[i] with a NaN result written as the canonical NaN
// (kernels/shared/canonical_nan.h). Shared by the plain accumulation (elementwise.cu) and the
// pass that counts the density correction's histogram as it accumulates (histogram.cu), so the
// two write the same bits.
#pragma once

#include "cuda/kernels/device_common.cuh"

namespace sccl::cuda_kernels {

struct LoadF32 {
  const float* g;
  __device__ float operator()(size_t i) const { return g[i]; }
};
struct LoadF64 {
  const double* g;
  __device__ double operator()(size_t i) const { return g[i]; }
};
struct LoadF16 {
  const uint16_t* g;
  __device__ float operator()(size_t i) const { return fp16ToFloatQuiet(g[i]); }
};
struct LoadBf16 {
  const uint16_t* g;
  __device__ float operator()(size_t i) const { return bf16ToFloat(g[i]); }
};

// residual null: the gradient alone (a copy or exact widening, bits kept).
template <typename Acc, typename Load>
__device__ inline Acc accumulatedValue(const Acc* residual, const Load& load, size_t i) {
  return residual == nullptr ? load(i) : canonicalizeNaN(residual[i] + load(i));
}

// Calls launch(acc, residual, load) with the typed accumulator and residual pointers and the
// gradient's loader, for the pairs accumulate() takes: float64 + float64, float32 + float32,
// float16 or bfloat16 (the caller has checked the pair).
template <typename Launch>
void withAccumulateTypes(void* acc, const void* residual, scclDataType_t acc_dtype,
                         const void* grad, scclDataType_t grad_dtype, Launch&& launch) {
  if (acc_dtype == scclFloat64) {
    launch(static_cast<double*>(acc), static_cast<const double*>(residual),
           LoadF64{static_cast<const double*>(grad)});
    return;
  }
  auto* a = static_cast<float*>(acc);
  const auto* r = static_cast<const float*>(residual);
  const auto* half = static_cast<const uint16_t*>(grad);
  switch (grad_dtype) {
    case scclFloat16: launch(a, r, LoadF16{half}); break;
    case scclBfloat16: launch(a, r, LoadBf16{half}); break;
    default: launch(a, r, LoadF32{static_cast<const float*>(grad)}); break;
  }
}

// The unsigned bit pattern of an accumulator value (float32 or float64).
__device__ inline uint32_t accBits(float v) { return floatToBits(v); }
__device__ inline uint64_t accBits(double v) { return uint64_t(__double_as_longlong(v)); }

}  // namespace sccl::cuda_kernels
