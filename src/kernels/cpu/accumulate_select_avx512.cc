// fusedGroupsAvx512: see accumulate_select_avx512.h.
//
// Per group of 64 elements: four vectors of sums (the widening load and canonical NaN blend of
// accumulate(), kernels/cpu/accumulate_simd.h), stored, their non-finite lanes counted (exponent
// all ones), and their magnitudes compared with the floor as unsigned integers (the selection's
// predicate, kernels/shared/magnitude_bits.h) into one 64-bit mask. Only a group with a hit is
// spilled to a 256-byte stack buffer, from which its entries are appended in ascending order.
// Results are therefore the bits of accumulate() and of selectAbove() on the written data.
#include "kernels/cpu/accumulate_select_avx512.h"

#include "kernels/cpu/accumulate_simd.h"
#include "kernels/cpu/simd.h"

namespace sccl::cpu {
namespace {

using accumulate_simd::AccumulateKind;
using accumulate_simd::canonicalizeNaNAvx512;
using accumulate_simd::loadGradAvx512;

template <AccumulateKind kKind, bool kHasResidual, bool kStreaming>
SCCL_TARGET_AVX512 size_t fusedGroups(float* acc, const float* residual, const void* grad,
                                      size_t begin, size_t end, uint32_t floor_bits, int64_t* idx,
                                      uint32_t* val, uint64_t* nonfinite, size_t* emitted,
                                      float* out) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  const __m512i floor = _mm512_set1_epi32(static_cast<int>(floor_bits));
  alignas(64) uint32_t group[64];
  uint64_t count = 0;
  size_t n = 0;
  size_t i = begin;
  for (; i + 64 <= end; i += 64) {
    __m512 sums[4];
    __mmask16 hits[4];
    for (int v = 0; v < 4; ++v) {
      const size_t at = i + 16 * size_t(v);
      __m512 sum = loadGradAvx512<kKind>(grad, at);
      if constexpr (kHasResidual) {
        sum = canonicalizeNaNAvx512(_mm512_add_ps(_mm512_loadu_ps(residual + at), sum));
      }
      if constexpr (kStreaming) {
        _mm512_stream_ps(acc + at, sum);
        if (out != nullptr) _mm512_stream_ps(out + at, _mm512_setzero_ps());
      } else {
        _mm512_storeu_ps(acc + at, sum);
      }
      const __m512i bits = _mm512_castps_si512(sum);
      count += __builtin_popcount(static_cast<unsigned>(
          _mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, exponent), exponent)));
      hits[v] = _mm512_cmpge_epu32_mask(_mm512_and_si512(bits, magnitude), floor);
      sums[v] = sum;
    }
    const __mmask32 low = _mm512_kunpackw(hits[1], hits[0]);
    const __mmask32 high = _mm512_kunpackw(hits[3], hits[2]);
    uint64_t mask = _cvtmask64_u64(_mm512_kunpackd(high, low));
    if (mask == 0) continue;
    for (int v = 0; v < 4; ++v) _mm512_store_ps(reinterpret_cast<float*>(group) + 16 * v, sums[v]);
    while (mask != 0) {
      const unsigned bit = static_cast<unsigned>(__builtin_ctzll(mask));
      idx[n] = static_cast<int64_t>(i + bit);
      val[n] = group[bit];
      ++n;
      mask &= mask - 1;
    }
  }
  *nonfinite += count;
  *emitted = n;
  return i;
}

template <AccumulateKind kKind>
FusedGroupsFn pick(bool has_residual, bool streaming) {
  if (has_residual) {
    return streaming ? fusedGroups<kKind, true, true> : fusedGroups<kKind, true, false>;
  }
  return streaming ? fusedGroups<kKind, false, true> : fusedGroups<kKind, false, false>;
}

}  // namespace

FusedGroupsFn fusedGroupsAvx512(scclDataType_t grad_dtype, bool has_residual, bool streaming) {
  switch (grad_dtype) {
    case scclFloat32: return pick<AccumulateKind::F32F32>(has_residual, streaming);
    case scclFloat16: return pick<AccumulateKind::F32F16>(has_residual, streaming);
    case scclBfloat16: return pick<AccumulateKind::F32Bf16>(has_residual, streaming);
    default: break;
  }
  return nullptr;
}

}  // namespace sccl::cpu
