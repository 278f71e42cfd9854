// acc = residual + widen(grad) on the CPU, counting the non-finite results in the same pass.
//
// Every element is one IEEE addition (or a plain widening copy when there is no residual), so all
// ISA paths and any split into parts give bitwise the same sums. fp16 and bf16 widen to float32
// exactly (F16C conversion, or a 16-bit shift for bf16). The non-finite test is on the result's
// bits (exponent all ones: +-inf or NaN) while they are still in a register: an and, a compare
// and a count per vector, which the memory-bound loop hides (docs/kernels.md has the
// measurement). Counts are integers, so their sum does not depend on the split either.
//
// A sum that is NaN is written as the canonical NaN (kernels/shared/canonical_nan.h): x86 keeps
// the first NaN operand's payload (and makes 0xffc00000 of inf - inf), CUDA writes 0x7fffffff, and
// both backends must agree bit for bit. The vector paths blend the constant into the lanes that
// compare unordered with themselves, one compare and one blend per vector, hidden by memory like
// the count. Without a residual nothing is added: the widened gradient keeps its NaN as it is.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/accumulate_simd.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/shared/canonical_nan.h"

namespace sccl::cpu {
namespace {

using accumulate_simd::AccumulateKind;
using accumulate_simd::canonicalizeNaNAvx512;
using accumulate_simd::loadGradAvx512;


template <AccumulateKind kKind>
using AccValue = std::conditional_t<kKind == AccumulateKind::F64F64, double, float>;

// The scalar widening quiets a signalling NaN as F16C does (kernels/shared/half.h, shared with
// CUDA).
inline float widenFp16Quiet(uint16_t h) {
  return fp16ToFloatQuiet(h);
}

template <AccumulateKind kKind>
inline AccValue<kKind> widenGrad(const void* grad, size_t i) {
  if constexpr (kKind == AccumulateKind::F32F16) {
    return widenFp16Quiet(static_cast<const uint16_t*>(grad)[i]);
  } else if constexpr (kKind == AccumulateKind::F32Bf16) {
    return bf16ToFloat(static_cast<const uint16_t*>(grad)[i]);
  } else {
    return static_cast<const AccValue<kKind>*>(grad)[i];
  }
}

inline bool isNonFinite(float value) {
  return (floatToBits(value) & 0x7f800000u) == 0x7f800000u;
}

inline bool isNonFinite(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
}

// Elements [begin, end); every ISA path ends with this for its tail. Returns the non-finite count.
template <AccumulateKind kKind, bool kHasResidual>
uint64_t accumulateScalar(void* acc, const void* residual, const void* grad, size_t begin,
                          size_t end) {
  using Value = AccValue<kKind>;
  Value* out = static_cast<Value*>(acc);
  uint64_t nonfinite = 0;
  for (size_t i = begin; i < end; ++i) {
    Value sum = widenGrad<kKind>(grad, i);
    if constexpr (kHasResidual) sum = canonicalizeNaN(static_cast<const Value*>(residual)[i] + sum);
    out[i] = sum;
    nonfinite += isNonFinite(sum);
  }
  return nonfinite;
}

template <AccumulateKind kKind>
SCCL_TARGET_AVX2 inline __m256 loadGradAvx2(const void* grad, size_t i) {
  if constexpr (kKind == AccumulateKind::F32F32) {
    return _mm256_loadu_ps(static_cast<const float*>(grad) + i);
  } else {
    __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(grad) + i));
    if constexpr (kKind == AccumulateKind::F32F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

// The canonical NaN in the lanes that are NaN (unordered with themselves), the others unchanged.
SCCL_TARGET_AVX2 inline __m256 canonicalizeNaNAvx2(__m256 v) {
  const __m256 canonical = _mm256_castsi256_ps(_mm256_set1_epi32(int(kCanonicalNaNFloat32)));
  return _mm256_blendv_ps(v, canonical, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

SCCL_TARGET_AVX2 inline __m256d canonicalizeNaNAvx2(__m256d v) {
  const __m256d canonical =
      _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(kCanonicalNaNFloat64)));
  return _mm256_blendv_pd(v, canonical, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
}

SCCL_TARGET_AVX512 inline __m512d canonicalizeNaNAvx512(__m512d v) {
  const __m512d canonical =
      _mm512_castsi512_pd(_mm512_set1_epi64(static_cast<long long>(kCanonicalNaNFloat64)));
  return _mm512_mask_mov_pd(v, _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), canonical);
}

// AVX2 counts in vector lanes (a compare gives -1 per non-finite lane, so subtracting it counts)
// rather than movemask + popcount per vector, which cost 10-20 % on data in cache. 32-bit lanes
// are added to the total every kCountBlockVectors vectors, long before they could wrap.
constexpr size_t kCountBlockVectors = size_t{1} << 30;

template <typename Lane>
SCCL_TARGET_AVX2 inline uint64_t sumLanes(__m256i lanes) {
  Lane values[32 / sizeof(Lane)];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(values), lanes);
  uint64_t sum = 0;
  for (Lane value : values) sum += value;
  return sum;
}

// The vector loops return where they stopped and add their non-finite count to *nonfinite.
template <AccumulateKind kKind, bool kHasResidual>
SCCL_TARGET_AVX2 size_t accumulateAvx2(void* acc, const void* residual, const void* grad,
                                       size_t begin, size_t end, uint64_t* nonfinite) {
  size_t i = begin;
  if constexpr (kKind == AccumulateKind::F64F64) {
    double* out = static_cast<double*>(acc);
    const double* g = static_cast<const double*>(grad);
    const __m256i exponent = _mm256_set1_epi64x(0x7ff0000000000000ll);
    __m256i lanes = _mm256_setzero_si256();
    for (; i + 4 <= end; i += 4) {
      __m256d sum = _mm256_loadu_pd(g + i);
      if constexpr (kHasResidual) {
        sum = canonicalizeNaNAvx2(
            _mm256_add_pd(_mm256_loadu_pd(static_cast<const double*>(residual) + i), sum));
      }
      _mm256_storeu_pd(out + i, sum);
      __m256i bits = _mm256_and_si256(_mm256_castpd_si256(sum), exponent);
      lanes = _mm256_sub_epi64(lanes, _mm256_cmpeq_epi64(bits, exponent));
    }
    *nonfinite += sumLanes<uint64_t>(lanes);
    return i;
  }
  float* out = static_cast<float*>(acc);
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  while (i + 8 <= end) {
    const size_t block_end = i + std::min((end - i) / 8, kCountBlockVectors) * 8;
    __m256i lanes = _mm256_setzero_si256();
    for (; i < block_end; i += 8) {
      __m256 sum = loadGradAvx2<kKind>(grad, i);
      if constexpr (kHasResidual) {
        sum = canonicalizeNaNAvx2(
            _mm256_add_ps(_mm256_loadu_ps(static_cast<const float*>(residual) + i), sum));
      }
      _mm256_storeu_ps(out + i, sum);
      __m256i bits = _mm256_and_si256(_mm256_castps_si256(sum), exponent);
      lanes = _mm256_sub_epi32(lanes, _mm256_cmpeq_epi32(bits, exponent));
    }
    *nonfinite += sumLanes<uint32_t>(lanes);
  }
  return i;
}

template <AccumulateKind kKind, bool kHasResidual>
SCCL_TARGET_AVX512 size_t accumulateAvx512(void* acc, const void* residual, const void* grad,
                                           size_t begin, size_t end, uint64_t* nonfinite) {
  uint64_t count = 0;
  size_t i = begin;
  if constexpr (kKind == AccumulateKind::F64F64) {
    double* out = static_cast<double*>(acc);
    const double* g = static_cast<const double*>(grad);
    const __m512i exponent = _mm512_set1_epi64(0x7ff0000000000000ll);
    for (; i + 8 <= end; i += 8) {
      __m512d sum = _mm512_loadu_pd(g + i);
      if constexpr (kHasResidual) {
        sum = canonicalizeNaNAvx512(
            _mm512_add_pd(_mm512_loadu_pd(static_cast<const double*>(residual) + i), sum));
      }
      _mm512_storeu_pd(out + i, sum);
      __m512i bits = _mm512_and_si512(_mm512_castpd_si512(sum), exponent);
      count += __builtin_popcount(static_cast<unsigned>(_mm512_cmpeq_epi64_mask(bits, exponent)));
    }
  } else {
    float* out = static_cast<float*>(acc);
    const __m512i exponent = _mm512_set1_epi32(0x7f800000);
    for (; i + 16 <= end; i += 16) {
      __m512 sum = loadGradAvx512<kKind>(grad, i);
      if constexpr (kHasResidual) {
        sum = canonicalizeNaNAvx512(
            _mm512_add_ps(_mm512_loadu_ps(static_cast<const float*>(residual) + i), sum));
      }
      _mm512_storeu_ps(out + i, sum);
      __m512i bits = _mm512_and_si512(_mm512_castps_si512(sum), exponent);
      count += __builtin_popcount(static_cast<unsigned>(_mm512_cmpeq_epi32_mask(bits, exponent)));
    }
  }
  *nonfinite += count;
  return i;
}

// One part: the ISA's vector loop, then the scalar tail. Returns the part's non-finite count.
template <AccumulateKind kKind, bool kHasResidual>
uint64_t accumulateRange(CpuIsa isa, void* acc, const void* residual, const void* grad,
                         size_t begin, size_t end) {
  uint64_t nonfinite = 0;
  size_t vector_end = begin;
  if (isa == CpuIsa::Avx512) {
    vector_end = accumulateAvx512<kKind, kHasResidual>(acc, residual, grad, begin, end, &nonfinite);
  } else if (isa == CpuIsa::Avx2) {
    vector_end = accumulateAvx2<kKind, kHasResidual>(acc, residual, grad, begin, end, &nonfinite);
  }
  return nonfinite + accumulateScalar<kKind, kHasResidual>(acc, residual, grad, vector_end, end);
}

using RangeFn = AccumulateRangeFn;

template <AccumulateKind kKind>
RangeFn rangeFnFor(bool has_residual) {
  return has_residual ? accumulateRange<kKind, true> : accumulateRange<kKind, false>;
}

// The instantiation for a dtype pair, or null when the pair is not supported.
RangeFn chooseRangeFn(scclDataType_t acc_dtype, scclDataType_t grad_dtype, bool has_residual) {
  if (acc_dtype == scclFloat64 && grad_dtype == scclFloat64) {
    return rangeFnFor<AccumulateKind::F64F64>(has_residual);
  }
  if (acc_dtype != scclFloat32) return nullptr;
  switch (grad_dtype) {
    case scclFloat32: return rangeFnFor<AccumulateKind::F32F32>(has_residual);
    case scclFloat16: return rangeFnFor<AccumulateKind::F32F16>(has_residual);
    case scclBfloat16: return rangeFnFor<AccumulateKind::F32Bf16>(has_residual);
    default: break;
  }
  return nullptr;
}

// Three streams (two reads, one write) per element: parts smaller than this are not worth a
// pool round trip.
constexpr size_t kMinPartElements = size_t{1} << 16;

}  // namespace

AccumulateRangeFn accumulateRangeFor(scclDataType_t acc_dtype, scclDataType_t grad_dtype,
                                     bool has_residual) {
  return chooseRangeFn(acc_dtype, grad_dtype, has_residual);
}

scclResult_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype, const void* grad,
                        scclDataType_t grad_dtype, size_t count, uint64_t* nonfinite) {
  const RangeFn range_fn = chooseRangeFn(acc_dtype, grad_dtype, residual != nullptr);
  if (range_fn == nullptr) {
    return fail(scclInvalidArgument, "accumulate: %s = %s + %s is not supported",
                dataTypeName(acc_dtype), dataTypeName(acc_dtype), dataTypeName(grad_dtype));
  }
  const CpuIsa isa = activeCpuIsa();
  const size_t nparts = kernelPartCount(count, kMinPartElements);
  std::atomic<uint64_t> total{0};
  cpuThreadPool().parallelFor(nparts, [&](size_t p) {
    // Part boundaries on multiples of 16 elements keep every part's vector loop whole.
    size_t blocks = count / 16;
    size_t begin = blocks * p / nparts * 16;
    size_t end = p + 1 == nparts ? count : blocks * (p + 1) / nparts * 16;
    total.fetch_add(range_fn(isa, acc, residual, grad, begin, end), std::memory_order_relaxed);
  });
  if (nonfinite != nullptr) *nonfinite = total.load(std::memory_order_relaxed);
  return scclSuccess;
}

}  // namespace sccl::cpu
