// The AVX-512 pieces of accumulate() that the fused pass (accumulate_select.cc) shares, so that
// both write exactly the same sums: the widening load of each gradient type and the canonical
// NaN blend (docs/kernels.md, accumulate).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/simd.h"
#include "kernels/shared/canonical_nan.h"

namespace sccl::cpu::accumulate_simd {

// The four supported (acc, grad) pairs.
enum class AccumulateKind { F32F32, F32F16, F32Bf16, F64F64 };

template <AccumulateKind kKind>
SCCL_TARGET_AVX512 inline __m512 loadGradAvx512(const void* grad, size_t i) {
  if constexpr (kKind == AccumulateKind::F32F32) {
    return _mm512_loadu_ps(static_cast<const float*>(grad) + i);
  } else {
    __m256i h = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(grad) + i));
    if constexpr (kKind == AccumulateKind::F32F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// The canonical NaN in the lanes that are NaN (unordered with themselves), the others unchanged.
SCCL_TARGET_AVX512 inline __m512 canonicalizeNaNAvx512(__m512 v) {
  const __m512 canonical = _mm512_castsi512_ps(_mm512_set1_epi32(int(kCanonicalNaNFloat32)));
  return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), canonical);
}

}  // namespace sccl::cpu::accumulate_simd
