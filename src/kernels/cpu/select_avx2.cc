// AVX2 block kernels of the threshold selection. AVX2 has only signed integer compares, which is
// enough: magnitude bits (sign cleared) and threshold bits are non-negative as signed integers,
// so |x| >= t is magnitude > t - 1 (t = 0 gives -1: everything qualifies). The compare results
// of a 64-element group become one 64-bit mask (movemask) for emitGroup(); in the branchy style
// an empty group (ORed results tested once) skips that. Data is prefetched kPrefetchBytes ahead.
#include "kernels/cpu/select.h"
#include "kernels/cpu/simd.h"

namespace sccl::cpu_select {
namespace {

template <typename Bits>
SCCL_TARGET_AVX2 inline __m256i broadcastBits(Bits bits) {
  if constexpr (sizeof(Bits) == 2) {
    return _mm256_set1_epi16(static_cast<short>(bits));
  } else if constexpr (sizeof(Bits) == 4) {
    return _mm256_set1_epi32(static_cast<int>(bits));
  } else {
    return _mm256_set1_epi64x(static_cast<long long>(bits));
  }
}

// All-ones lanes where magnitude(x) > threshold_minus_one.
template <typename Bits>
SCCL_TARGET_AVX2 inline __m256i compareLanes(const Bits* x, __m256i threshold_minus_one,
                                             __m256i magnitude_mask) {
  __m256i magnitude =
      _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)), magnitude_mask);
  if constexpr (sizeof(Bits) == 2) {
    return _mm256_cmpgt_epi16(magnitude, threshold_minus_one);
  } else if constexpr (sizeof(Bits) == 4) {
    return _mm256_cmpgt_epi32(magnitude, threshold_minus_one);
  } else {
    return _mm256_cmpgt_epi64(magnitude, threshold_minus_one);
  }
}

// One bit per element for the 32-byte vector of compare results at v (elements in order).
template <typename Bits>
SCCL_TARGET_AVX2 inline uint64_t laneBits(const __m256i* v) {
  if constexpr (sizeof(Bits) == 4) {
    return uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(*v)));
  } else if constexpr (sizeof(Bits) == 8) {
    return uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(*v)));
  } else {
    // 16-bit: pack two vectors to bytes (this interleaves 128-bit halves), restore the order,
    // and take one bit per byte: 32 elements from v[0] and v[1].
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(v[0], v[1]), 0xD8);
    return uint32_t(_mm256_movemask_epi8(bytes));
  }
}

template <typename Bits, EmitStyle kStyle>
SCCL_TARGET_AVX2 size_t selectGroups(const Bits* x, size_t begin, size_t end, Bits threshold_bits,
                                     int64_t* idx, Bits* val) {
  constexpr size_t kLanes = 32 / sizeof(Bits);
  constexpr size_t kVectors = kGroupElements / kLanes;
  // Vectors consumed per laneBits() call, and the elements it covers.
  constexpr size_t kVectorsPerBits = sizeof(Bits) == 2 ? 2 : 1;
  constexpr size_t kElementsPerBits = kLanes * kVectorsPerBits;
  // Wraps to all ones for threshold 0, which is -1 as a signed lane: every element qualifies.
  const __m256i threshold_minus_one = broadcastBits<Bits>(static_cast<Bits>(threshold_bits - 1));
  const __m256i magnitude_mask = broadcastBits<Bits>(kMagnitudeMask<Bits>);
  size_t n = 0;
  size_t i = begin;
  for (; i + kGroupElements <= end; i += kGroupElements) {
    prefetchAhead(x, i, end);
    __m256i hits[kVectors];
    __m256i any = _mm256_setzero_si256();
    for (size_t v = 0; v < kVectors; ++v) {
      hits[v] = compareLanes<Bits>(x + i + v * kLanes, threshold_minus_one, magnitude_mask);
      any = _mm256_or_si256(any, hits[v]);
    }
    // Branchy: an empty group (the common case at low density) skips building the mask.
    if (kStyle == EmitStyle::Branchy && _mm256_testz_si256(any, any)) continue;
    uint64_t mask = 0;
    for (size_t v = 0; v < kVectors; v += kVectorsPerBits) {
      mask |= laneBits<Bits>(&hits[v]) << (v / kVectorsPerBits * kElementsPerBits);
    }
    n += emitGroup<kStyle>(x, i, mask, idx + n, val + n);
  }
  return n + selectTail(x, i, end, threshold_bits, idx + n, val + n);
}

template <typename Bits>
SCCL_TARGET_AVX2 size_t selectAvx2(const void* data, size_t begin, size_t end,
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

BlockSelectFn blockSelectAvx2(size_t element_bytes) {
  switch (element_bytes) {
    case 2: return selectAvx2<uint16_t>;
    case 4: return selectAvx2<uint32_t>;
    case 8: return selectAvx2<uint64_t>;
    default: break;
  }
  return nullptr;
}

}  // namespace sccl::cpu_select
