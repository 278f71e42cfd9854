// Element-wise and indexed kernels of the CUDA backend: accumulate (fp32/fp16/bf16 gradients
// into a float32 residual, float64 into float64), gather, scatter, zero at indices and the
// converting scatter. One IEEE operation per element, as on the CPU, and a NaN result written as
// the canonical NaN (kernels/shared/canonical_nan.h: CUDA's own NaN result is 0x7fffffff, x86
// keeps an operand's payload), so results are bitwise the CPU backend's. A copy or conversion
// without arithmetic (no residual, unit scale) keeps the bits. The non-finite count is an integer
// atomic: its total does not depend on order.
#include "cuda/dispatch.h"
#include "cuda/kernels/accumulate_element.cuh"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/gather_plan.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

template <typename Acc, typename Load>
__global__ void accumulateKernel(Acc* acc, const Acc* residual, Load load, size_t count,
                                 unsigned long long* nonfinite) {
  unsigned long long bad = 0;
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    const Acc value = accumulatedValue(residual, load, i);
    acc[i] = value;
    bad += nonFinite(value) ? 1 : 0;
  }
  if (nonfinite != nullptr && bad != 0) atomicAdd(nonfinite, bad);
}

template <typename Bits>
__global__ void gatherKernel(const Bits* src, const int64_t* idx, size_t n, Bits* out) {
  for (size_t j = globalThread(); j < n; j += gridThreads()) out[j] = src[idx[j]];
}

// positions[j] = candidates[positions[j]], in place (each entry reads its own position first); a
// negative position (padding) stays -1.
__global__ void candidateIndicesKernel(const int64_t* candidates, int64_t* positions, size_t n) {
  for (size_t j = globalThread(); j < n; j += gridThreads()) {
    const int64_t p = positions[j];
    positions[j] = p < 0 ? int64_t{-1} : candidates[p];
  }
}

// fault (device, may be null): the resident gather's index-check word; nothing is written
// unless it is kNoIndexFault.
__device__ inline bool faulted(const uint32_t* fault) {
  return fault != nullptr && *fault != kNoIndexFault;
}

template <typename Bits>
__global__ void scatterKernel(Bits* dst, const int64_t* idx, const Bits* vals, size_t n,
                              const uint32_t* fault) {
  if (faulted(fault)) return;
  for (size_t j = globalThread(); j < n; j += gridThreads())
    dst[idx[j]] = vals == nullptr ? Bits{0} : vals[j];
}

__global__ void scatterFloatKernel(void* dst, scclDataType_t dtype, const int64_t* idx,
                                   const float* vals, size_t n, float scale, bool scaled,
                                   const uint32_t* fault) {
  if (faulted(fault)) return;
  for (size_t j = globalThread(); j < n; j += gridThreads())
    storeFloat(dst, dtype, size_t(idx[j]), scaled ? canonicalizeNaN(vals[j] * scale) : vals[j]);
}

__global__ void scatterDoubleKernel(double* dst, const int64_t* idx, const double* vals, size_t n,
                                    double scale, const uint32_t* fault) {
  if (faulted(fault)) return;
  for (size_t j = globalThread(); j < n; j += gridThreads())
    dst[idx[j]] = canonicalizeNaN(vals[j] * scale);
}

// The average's division, as the CPU's divideByRanks (core/divide_by_ranks.cc): IEEE division (nvcc's
// default -prec-div=true), half types widened to float32 and rounded back to nearest even, a NaN
// quotient canonical.
__global__ void divideFloatKernel(void* x, scclDataType_t dtype, size_t count, float divisor) {
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    const uint16_t* half = static_cast<const uint16_t*>(x);
    const float v = dtype == scclFloat16    ? fp16ToFloat(half[i])
                    : dtype == scclBfloat16 ? bf16ToFloat(half[i])
                                            : static_cast<const float*>(x)[i];
    storeFloat(x, dtype, i, canonicalizeNaN(v / divisor));
  }
}

__global__ void divideDoubleKernel(double* x, size_t count, double divisor) {
  for (size_t i = globalThread(); i < count; i += gridThreads())
    x[i] = canonicalizeNaN(x[i] / divisor);
}

template <size_t kBytes>
cudaError_t scatterWidth(void* dst, const int64_t* idx, const void* vals, size_t n,
                         const uint32_t* fault, cudaStream_t stream) {
  using Bits = typename BitsOf<kBytes>::type;
  scatterKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<Bits*>(dst), idx,
                                                     static_cast<const Bits*>(vals), n, fault);
  return cudaGetLastError();
}

}  // namespace

cudaError_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype, const void* grad,
                       scclDataType_t grad_dtype, size_t count, uint64_t* nonfinite,
                       cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  auto* bad = reinterpret_cast<unsigned long long*>(nonfinite);
  const unsigned grid = gridFor(count);
  withAccumulateTypes(acc, residual, acc_dtype, grad, grad_dtype,
                      [&](auto* a, const auto* r, auto load) {
                        accumulateKernel<<<grid, kThreads, 0, stream>>>(a, r, load, count, bad);
                      });
  return cudaGetLastError();
}

cudaError_t candidateIndices(const int64_t* candidates, int64_t* positions, size_t n,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  candidateIndicesKernel<<<gridFor(n), kThreads, 0, stream>>>(candidates, positions, n);
  return cudaGetLastError();
}

cudaError_t gather(const void* src, size_t element_bytes, const int64_t* idx, size_t n, void* out,
                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 2:
      gatherKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint16_t*>(src), idx, n,
                                                        static_cast<uint16_t*>(out));
      break;
    case 4:
      gatherKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint32_t*>(src), idx, n,
                                                        static_cast<uint32_t*>(out));
      break;
    default:
      gatherKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint64_t*>(src), idx, n,
                                                        static_cast<uint64_t*>(out));
      break;
  }
  return cudaGetLastError();
}

cudaError_t scatter(void* dst, size_t element_bytes, const int64_t* idx, const void* vals, size_t n,
                    cudaStream_t stream, const uint32_t* fault) {
  if (n == 0) return cudaSuccess;
  if (element_bytes == 2) return scatterWidth<2>(dst, idx, vals, n, fault, stream);
  if (element_bytes == 4) return scatterWidth<4>(dst, idx, vals, n, fault, stream);
  return scatterWidth<8>(dst, idx, vals, n, fault, stream);
}

cudaError_t zeroAt(void* dst, size_t element_bytes, const int64_t* idx, size_t n,
                   cudaStream_t stream) {
  return scatter(dst, element_bytes, idx, nullptr, n, stream);
}

cudaError_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx, const void* vals,
                          scclDataType_t val_dtype, size_t n, double scale, cudaStream_t stream,
                          const uint32_t* fault) {
  if (n == 0) return cudaSuccess;
  if (val_dtype == scclFloat64) {
    if (scale == 1.0) return scatter(dst, 8, idx, vals, n, stream, fault);
    scatterDoubleKernel<<<gridFor(n), kThreads, 0, stream>>>(
        static_cast<double*>(dst), idx, static_cast<const double*>(vals), n, scale, fault);
    return cudaGetLastError();
  }
  const float factor = static_cast<float>(scale);
  if (dst_dtype == scclFloat32 && factor == 1.0f) {
    return scatter(dst, 4, idx, vals, n, stream, fault);
  }
  scatterFloatKernel<<<gridFor(n), kThreads, 0, stream>>>(
      dst, dst_dtype, idx, static_cast<const float*>(vals), n, factor, factor != 1.0f, fault);
  return cudaGetLastError();
}

cudaError_t divideByRanks(void* x, scclDataType_t dtype, size_t count, int nranks,
                          cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (dtype == scclFloat64) {
    divideDoubleKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<double*>(x), count,
                                                                double(nranks));
  } else {
    divideFloatKernel<<<gridFor(count), kThreads, 0, stream>>>(x, dtype, count, float(nranks));
  }
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
