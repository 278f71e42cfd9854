// The AVX2 lane kernels of the CPU moments of |x| (abs_moments.h): the same operations on the
// same lanes in the same order as addOne, four doubles per ymm register.
#include "kernels/cpu/abs_moments.h"
#include "kernels/cpu/simd.h"

namespace sccl::cpu_moments {
namespace {

// AVX2: the sixteen lanes are four ymm registers of four doubles per accumulator. AVX2 has 16
// ymm registers, too few for every accumulator of all sixteen lanes at once, so a block is
// processed in two sweeps, lanes 0-7 and then lanes 8-15 (the second reads the block again from
// cache), and the NaN count, almost always zero, is kept in memory and updated on a rare branch.
struct Avx2Lanes {
  __m256i count[2], zero_count[2];
  __m256d sum_abs[2], sum_sq[2], max_abs[2], min_abs[2], sum_log[2];
};

SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void avx2Load(Avx2Lanes& v, const LaneMoments& m, int half) {
  for (int j = 0; j < 2; ++j) {
    const int lane = 8 * half + 4 * j;
    v.count[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m.count + lane));
    v.zero_count[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m.zero_count + lane));
    v.sum_abs[j] = _mm256_load_pd(m.sum_abs + lane);
    v.sum_sq[j] = _mm256_load_pd(m.sum_sq + lane);
    v.max_abs[j] = _mm256_load_pd(m.max_abs + lane);
    v.min_abs[j] = _mm256_load_pd(m.min_abs + lane);
    v.sum_log[j] = _mm256_load_pd(m.sum_log + lane);
  }
}

SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void avx2Store(const Avx2Lanes& v, LaneMoments& m, int half) {
  for (int j = 0; j < 2; ++j) {
    const int lane = 8 * half + 4 * j;
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.count + lane), v.count[j]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.zero_count + lane), v.zero_count[j]);
    _mm256_store_pd(m.sum_abs + lane, v.sum_abs[j]);
    _mm256_store_pd(m.sum_sq + lane, v.sum_sq[j]);
    _mm256_store_pd(m.max_abs + lane, v.max_abs[j]);
    _mm256_store_pd(m.min_abs + lane, v.min_abs[j]);
    _mm256_store_pd(m.sum_log + lane, v.sum_log[j]);
  }
}

// logFromParts on four lanes.
SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE __m256d avx2LogFromParts(__m256d e, __m256d f) {
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d s = _mm256_div_pd(_mm256_sub_pd(f, one), _mm256_add_pd(f, one));
  const __m256d z = _mm256_mul_pd(s, s);
  __m256d t = _mm256_set1_pd(kAtanhSeries[0]);
  for (size_t i = 1; i < std::size(kAtanhSeries); ++i) {
    t = _mm256_add_pd(_mm256_mul_pd(t, z), _mm256_set1_pd(kAtanhSeries[i]));
  }
  const __m256d log_f = _mm256_mul_pd(_mm256_add_pd(s, s), t);
  return _mm256_add_pd(_mm256_mul_pd(e, _mm256_set1_pd(kLn2Hi)),
                       _mm256_add_pd(_mm256_mul_pd(e, _mm256_set1_pd(kLn2Lo)), log_f));
}

// sum_log += reproducibleLog(m) on the lanes of `use` (counted, m > 0). Normal finite m: the
// exponent and mantissa from the bits; a group with a subnormal or infinite m takes the scalar
// function (never for float32 or 16-bit data, whose magnitudes are normal doubles).
SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE __m256d avx2AddLog(__m256d sum, __m256d m, __m256d use) {
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d x = _mm256_blendv_pd(one, m, use);  // unused lanes: ln 1 = 0, added as nothing
  const __m256d special = _mm256_or_pd(
      _mm256_cmp_pd(x, _mm256_set1_pd(std::numeric_limits<double>::min()), _CMP_LT_OQ),
      _mm256_cmp_pd(x, _mm256_set1_pd(std::numeric_limits<double>::max()), _CMP_GT_OQ));
  const __m256i bits = _mm256_castpd_si256(x);
  // exponent field as a double: OR it into the mantissa of 2^52, subtract 2^52 (exact).
  const __m256d magic = _mm256_castsi256_pd(_mm256_set1_epi64x(0x4330000000000000));
  __m256d e = _mm256_sub_pd(
      _mm256_sub_pd(_mm256_or_pd(_mm256_castsi256_pd(_mm256_srli_epi64(bits, 52)), magic), magic),
      _mm256_set1_pd(1023.0));
  __m256d f = _mm256_castsi256_pd(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(0x000fffffffffffff)),
                      _mm256_set1_epi64x(0x3ff0000000000000)));  // [1, 2)
  const __m256d big = _mm256_cmp_pd(f, _mm256_set1_pd(kSqrt2), _CMP_GT_OQ);
  f = _mm256_blendv_pd(f, _mm256_mul_pd(f, _mm256_set1_pd(0.5)), big);
  e = _mm256_blendv_pd(e, _mm256_add_pd(e, one), big);
  __m256d log = avx2LogFromParts(e, f);
  if (_mm256_movemask_pd(special) != 0) {
    alignas(32) double lanes[4], logs[4];
    _mm256_store_pd(lanes, x);
    for (int i = 0; i < 4; ++i) logs[i] = reproducibleLog(lanes[i]);
    log = _mm256_load_pd(logs);
  }
  return _mm256_add_pd(sum, _mm256_and_pd(log, use));
}

template <bool kLog>
SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void avx2Add(Avx2Lanes& v, int q, __m256d x, __m256d floor,
                                                 int64_t* nan_count) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d magnitude = _mm256_andnot_pd(sign, x);
  const __m256d counted = _mm256_cmp_pd(magnitude, floor, _CMP_GE_OQ);  // false for NaN
  const __m256d is_nan = _mm256_cmp_pd(magnitude, magnitude, _CMP_UNORD_Q);
  const __m256d is_zero = _mm256_cmp_pd(magnitude, _mm256_setzero_pd(), _CMP_EQ_OQ);
  const __m256d counted_magnitude = _mm256_and_pd(magnitude, counted);      // +0 where not counted
  v.count[q] = _mm256_sub_epi64(v.count[q], _mm256_castpd_si256(counted));  // true is -1
  if (const int nan_lanes = _mm256_movemask_pd(is_nan); nan_lanes != 0) {
    for (int b = 0; b < 4; ++b) nan_count[b] += (nan_lanes >> b) & 1;
  }
  v.zero_count[q] =
      _mm256_sub_epi64(v.zero_count[q], _mm256_castpd_si256(_mm256_and_pd(counted, is_zero)));
  v.sum_abs[q] = _mm256_add_pd(v.sum_abs[q], counted_magnitude);
  v.sum_sq[q] = _mm256_add_pd(v.sum_sq[q], _mm256_mul_pd(counted_magnitude, counted_magnitude));
  v.max_abs[q] = _mm256_max_pd(counted_magnitude, v.max_abs[q]);  // m > max ? m : max
  const __m256d candidate =
      _mm256_blendv_pd(_mm256_set1_pd(std::numeric_limits<double>::infinity()), magnitude, counted);
  v.min_abs[q] = _mm256_min_pd(candidate, v.min_abs[q]);  // m < min ? m : min
  if (kLog) {
    const __m256d positive = _mm256_cmp_pd(magnitude, _mm256_setzero_pd(), _CMP_GT_OQ);
    v.sum_log[q] = avx2AddLog(v.sum_log[q], magnitude, _mm256_and_pd(counted, positive));
  }
}

template <typename T>
SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE __m256d avx2LoadFour(const T* x) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_cvtps_pd(_mm_loadu_ps(x));
  } else {
    return _mm256_loadu_pd(x);
  }
}

template <bool kLog, typename T>
SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void addAvx2(LaneMoments& m, const T* x, size_t n,
                                                 double floor) {
  const __m256d vfloor = _mm256_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (int half = 0; half < 2; ++half) {
    Avx2Lanes v;
    avx2Load(v, m, half);
    for (size_t i = 0; i < full; i += kLanes) {
      for (int j = 0; j < 2; ++j) {
        const int lane = 8 * half + 4 * j;
        avx2Add<kLog>(v, j, avx2LoadFour(x + i + lane), vfloor, m.nan_count + lane);
      }
    }
    avx2Store(v, m, half);
  }
  addScalar<kLog>(m, x + full, n - full, floor);
}

template <bool kLog>
SCCL_TARGET_AVX2 void addFloatsAvx2(LaneMoments& m, const float* x, size_t n, double floor) {
  addAvx2<kLog>(m, x, n, floor);
}

template <bool kLog>
SCCL_TARGET_AVX2 void addDoublesAvx2(LaneMoments& m, const double* x, size_t n, double floor) {
  addAvx2<kLog>(m, x, n, floor);
}

SCCL_TARGET_AVX2 void widenFp16Avx2(const uint16_t* x, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
  widenFp16Scalar(x + i, n - i, out + i);
}

template <bool kLog>
void chunkLanesAvx2T(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsAvx2<kLog>, addDoublesAvx2<kLog>, widenFp16Avx2);
}

}  // namespace

ChunkLanesFn chunkLanesAvx2(bool want_log) {
  return want_log ? chunkLanesAvx2T<true> : chunkLanesAvx2T<false>;
}

}  // namespace sccl::cpu_moments
