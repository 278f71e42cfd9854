// AVX-512 block kernels of the threshold selection. Each group of 64 elements becomes one 64-bit
// mask (an unsigned compare per vector straight into a mask register; AVX-512BW for 16-bit
// data), and emitGroup() appends its hits. The data is prefetched kPrefetchBytes ahead.
#include "kernels/cpu/select.h"
#include "kernels/cpu/simd.h"

namespace sccl::cpu_select {
namespace {

SCCL_TARGET_AVX512 inline __m512i loadMagnitude(const void* address, __m512i magnitude_mask) {
  return _mm512_and_si512(_mm512_loadu_si512(address), magnitude_mask);
}

// The masks of a group are joined in mask registers (kunpck) and moved to a general register
// once, instead of one move, shift and or per vector.

// Mask of the 64 elements at x (16-bit elements: two vectors).
SCCL_TARGET_AVX512 inline uint64_t groupMask16(const uint16_t* x, __m512i threshold,
                                               __m512i magnitude_mask) {
  __mmask32 low = _mm512_cmpge_epu16_mask(loadMagnitude(x, magnitude_mask), threshold);
  __mmask32 high = _mm512_cmpge_epu16_mask(loadMagnitude(x + 32, magnitude_mask), threshold);
  return _cvtmask64_u64(_mm512_kunpackd(high, low));
}

// 32-bit elements: four vectors.
SCCL_TARGET_AVX512 inline uint64_t groupMask32(const uint32_t* x, __m512i threshold,
                                               __m512i magnitude_mask) {
  __mmask16 lanes[4];
  for (int v = 0; v < 4; ++v) {
    lanes[v] = _mm512_cmpge_epu32_mask(loadMagnitude(x + 16 * v, magnitude_mask), threshold);
  }
  __mmask32 low = _mm512_kunpackw(lanes[1], lanes[0]);
  __mmask32 high = _mm512_kunpackw(lanes[3], lanes[2]);
  return _cvtmask64_u64(_mm512_kunpackd(high, low));
}

// 64-bit elements: eight vectors.
SCCL_TARGET_AVX512 inline uint64_t groupMask64(const uint64_t* x, __m512i threshold,
                                               __m512i magnitude_mask) {
  __mmask8 lanes[8];
  for (int v = 0; v < 8; ++v) {
    lanes[v] = _mm512_cmpge_epu64_mask(loadMagnitude(x + 8 * v, magnitude_mask), threshold);
  }
  __mmask16 quarters[4];
  for (int q = 0; q < 4; ++q) quarters[q] = _mm512_kunpackb(lanes[2 * q + 1], lanes[2 * q]);
  __mmask32 low = _mm512_kunpackw(quarters[1], quarters[0]);
  __mmask32 high = _mm512_kunpackw(quarters[3], quarters[2]);
  return _cvtmask64_u64(_mm512_kunpackd(high, low));
}

template <typename Bits>
SCCL_TARGET_AVX512 inline uint64_t groupMask(const Bits* x, __m512i threshold,
                                             __m512i magnitude_mask) {
  if constexpr (sizeof(Bits) == 2) {
    return groupMask16(x, threshold, magnitude_mask);
  } else if constexpr (sizeof(Bits) == 4) {
    return groupMask32(x, threshold, magnitude_mask);
  } else {
    return groupMask64(x, threshold, magnitude_mask);
  }
}

template <typename Bits>
SCCL_TARGET_AVX512 inline __m512i broadcastBits(Bits bits) {
  if constexpr (sizeof(Bits) == 2) {
    return _mm512_set1_epi16(static_cast<short>(bits));
  } else if constexpr (sizeof(Bits) == 4) {
    return _mm512_set1_epi32(static_cast<int>(bits));
  } else {
    return _mm512_set1_epi64(static_cast<long long>(bits));
  }
}

template <typename Bits, EmitStyle kStyle>
SCCL_TARGET_AVX512 size_t selectGroups(const Bits* x, size_t begin, size_t end, Bits threshold_bits,
                                       int64_t* idx, Bits* val) {
  const __m512i threshold = broadcastBits<Bits>(threshold_bits);
  const __m512i magnitude_mask = broadcastBits<Bits>(kMagnitudeMask<Bits>);
  size_t n = 0;
  size_t i = begin;
  for (; i + kGroupElements <= end; i += kGroupElements) {
    prefetchAhead(x, i, end);
    uint64_t mask = groupMask<Bits>(x + i, threshold, magnitude_mask);
    n += emitGroup<kStyle>(x, i, mask, idx + n, val + n);
  }
  return n + selectTail(x, i, end, threshold_bits, idx + n, val + n);
}

template <typename Bits>
SCCL_TARGET_AVX512 size_t selectAvx512(const void* data, size_t begin, size_t end,
                                       uint64_t threshold_bits, EmitStyle style, int64_t* idx,
                                       void* val) {
  const Bits* x = static_cast<const Bits*>(data);
  const Bits threshold = static_cast<Bits>(threshold_bits);
  if (style == EmitStyle::BranchFree) {
    return selectGroups<Bits, EmitStyle::BranchFree>(x, begin, end, threshold, idx,
                                                     static_cast<Bits*>(val));
  }
  return selectGroups<Bits, EmitStyle::Branchy>(x, begin, end, threshold, idx,
                                                static_cast<Bits*>(val));
}

}  // namespace

BlockSelectFn blockSelectAvx512(size_t element_bytes) {
  switch (element_bytes) {
    case 2: return selectAvx512<uint16_t>;
    case 4: return selectAvx512<uint32_t>;
    case 8: return selectAvx512<uint64_t>;
    default: break;
  }
  return nullptr;
}

}  // namespace sccl::cpu_select
