// residual += grad on the CPU. Every element is one IEEE addition (residual + widened grad), so
// all ISA paths and any split into parts give bitwise the same sums; fp16 and bf16 widen to
// float32 exactly (F16C conversion, or a 16-bit shift for bf16) before the addition.
#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

// The four supported (residual, grad) pairs.
enum class AccumulateKind { F32F32, F32F16, F32Bf16, F64F64 };

// Elements [begin, end) of one pair; every ISA path ends with this for its tail.
void accumulateScalar(AccumulateKind kind, void* residual, const void* grad, size_t begin,
                      size_t end) {
  float* r32 = static_cast<float*>(residual);
  const uint16_t* g16 = static_cast<const uint16_t*>(grad);
  switch (kind) {
    case AccumulateKind::F32F32:
      for (size_t i = begin; i < end; ++i) r32[i] += static_cast<const float*>(grad)[i];
      break;
    case AccumulateKind::F32F16:
      for (size_t i = begin; i < end; ++i) r32[i] += fp16ToFloat(g16[i]);
      break;
    case AccumulateKind::F32Bf16:
      for (size_t i = begin; i < end; ++i) r32[i] += bf16ToFloat(g16[i]);
      break;
    case AccumulateKind::F64F64: {
      double* r64 = static_cast<double*>(residual);
      const double* g64 = static_cast<const double*>(grad);
      for (size_t i = begin; i < end; ++i) r64[i] += g64[i];
      break;
    }
  }
}

SCCL_TARGET_AVX2 size_t accumulateAvx2(AccumulateKind kind, void* residual, const void* grad,
                                       size_t begin, size_t end) {
  float* r32 = static_cast<float*>(residual);
  const uint16_t* g16 = static_cast<const uint16_t*>(grad);
  size_t i = begin;
  switch (kind) {
    case AccumulateKind::F32F32:
      for (const float* g = static_cast<const float*>(grad); i + 8 <= end; i += 8) {
        _mm256_storeu_ps(r32 + i, _mm256_add_ps(_mm256_loadu_ps(r32 + i), _mm256_loadu_ps(g + i)));
      }
      break;
    case AccumulateKind::F32F16:
      for (; i + 8 <= end; i += 8) {
        __m256 g = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g16 + i)));
        _mm256_storeu_ps(r32 + i, _mm256_add_ps(_mm256_loadu_ps(r32 + i), g));
      }
      break;
    case AccumulateKind::F32Bf16:
      for (; i + 8 <= end; i += 8) {
        __m256i wide =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g16 + i)));
        __m256 g = _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
        _mm256_storeu_ps(r32 + i, _mm256_add_ps(_mm256_loadu_ps(r32 + i), g));
      }
      break;
    case AccumulateKind::F64F64: {
      double* r64 = static_cast<double*>(residual);
      for (const double* g = static_cast<const double*>(grad); i + 4 <= end; i += 4) {
        _mm256_storeu_pd(r64 + i, _mm256_add_pd(_mm256_loadu_pd(r64 + i), _mm256_loadu_pd(g + i)));
      }
      break;
    }
  }
  return i;
}

SCCL_TARGET_AVX512 size_t accumulateAvx512(AccumulateKind kind, void* residual, const void* grad,
                                           size_t begin, size_t end) {
  float* r32 = static_cast<float*>(residual);
  const uint16_t* g16 = static_cast<const uint16_t*>(grad);
  size_t i = begin;
  switch (kind) {
    case AccumulateKind::F32F32:
      for (const float* g = static_cast<const float*>(grad); i + 16 <= end; i += 16) {
        _mm512_storeu_ps(r32 + i, _mm512_add_ps(_mm512_loadu_ps(r32 + i), _mm512_loadu_ps(g + i)));
      }
      break;
    case AccumulateKind::F32F16:
      for (; i + 16 <= end; i += 16) {
        __m512 g = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g16 + i)));
        _mm512_storeu_ps(r32 + i, _mm512_add_ps(_mm512_loadu_ps(r32 + i), g));
      }
      break;
    case AccumulateKind::F32Bf16:
      for (; i + 16 <= end; i += 16) {
        __m512i wide =
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g16 + i)));
        __m512 g = _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
        _mm512_storeu_ps(r32 + i, _mm512_add_ps(_mm512_loadu_ps(r32 + i), g));
      }
      break;
    case AccumulateKind::F64F64: {
      double* r64 = static_cast<double*>(residual);
      for (const double* g = static_cast<const double*>(grad); i + 8 <= end; i += 8) {
        _mm512_storeu_pd(r64 + i, _mm512_add_pd(_mm512_loadu_pd(r64 + i), _mm512_loadu_pd(g + i)));
      }
      break;
    }
  }
  return i;
}

void accumulateRange(CpuIsa isa, AccumulateKind kind, void* residual, const void* grad,
                     size_t begin, size_t end) {
  size_t vector_end = begin;
  if (isa == CpuIsa::Avx512) vector_end = accumulateAvx512(kind, residual, grad, begin, end);
  if (isa == CpuIsa::Avx2) vector_end = accumulateAvx2(kind, residual, grad, begin, end);
  accumulateScalar(kind, residual, grad, vector_end, end);
}

bool accumulateKind(scclDataType_t residual_dtype, scclDataType_t grad_dtype,
                    AccumulateKind* kind) {
  if (residual_dtype == scclFloat64 && grad_dtype == scclFloat64) {
    *kind = AccumulateKind::F64F64;
    return true;
  }
  if (residual_dtype != scclFloat32) return false;
  switch (grad_dtype) {
    case scclFloat32: *kind = AccumulateKind::F32F32; return true;
    case scclFloat16: *kind = AccumulateKind::F32F16; return true;
    case scclBfloat16: *kind = AccumulateKind::F32Bf16; return true;
    default: return false;
  }
}

// Three streams (two reads, one write) per element: parts smaller than this are not worth a
// pool round trip.
constexpr size_t kMinPartElements = size_t{1} << 16;

}  // namespace

scclResult_t accumulate(void* residual, scclDataType_t residual_dtype, const void* grad,
                        scclDataType_t grad_dtype, size_t count) {
  AccumulateKind kind;
  if (!accumulateKind(residual_dtype, grad_dtype, &kind)) {
    return fail(scclInvalidArgument, "accumulate: residual %s += grad %s is not supported",
                dataTypeName(residual_dtype), dataTypeName(grad_dtype));
  }
  const CpuIsa isa = activeCpuIsa();
  const size_t nparts = kernelPartCount(count, kMinPartElements);
  cpuThreadPool().parallelFor(nparts, [&](size_t p) {
    // Part boundaries on multiples of 16 elements keep every part's vector loop whole.
    size_t blocks = count / 16;
    size_t begin = blocks * p / nparts * 16;
    size_t end = p + 1 == nparts ? count : blocks * (p + 1) / nparts * 16;
    accumulateRange(isa, kind, residual, grad, begin, end);
  });
  return scclSuccess;
}

}  // namespace sccl::cpu
