// The AVX-512 lane kernels of the CPU moments of |x| (abs_moments.h): the same operations on
// the same lanes in the same order as addOne, eight doubles per zmm register, masked.
#include "kernels/cpu/abs_moments.h"
#include "kernels/cpu/simd.h"

namespace sccl::cpu_moments {
namespace {

// AVX-512: two zmm registers of eight doubles per accumulator, lanes 0-7 and 8-15.
struct Avx512Lanes {
  __m512i count[2], nan_count[2], zero_count[2];
  __m512d sum_abs[2], sum_sq[2], max_abs[2], min_abs[2], sum_log[2];
};

SCCL_TARGET_AVX512 SCCL_ALWAYS_INLINE void avx512Load(Avx512Lanes& v, const LaneMoments& m) {
  for (int h = 0; h < 2; ++h) {
    v.count[h] = _mm512_load_si512(m.count + 8 * h);
    v.nan_count[h] = _mm512_load_si512(m.nan_count + 8 * h);
    v.zero_count[h] = _mm512_load_si512(m.zero_count + 8 * h);
    v.sum_abs[h] = _mm512_load_pd(m.sum_abs + 8 * h);
    v.sum_sq[h] = _mm512_load_pd(m.sum_sq + 8 * h);
    v.max_abs[h] = _mm512_load_pd(m.max_abs + 8 * h);
    v.min_abs[h] = _mm512_load_pd(m.min_abs + 8 * h);
    v.sum_log[h] = _mm512_load_pd(m.sum_log + 8 * h);
  }
}

SCCL_TARGET_AVX512 SCCL_ALWAYS_INLINE void avx512Store(const Avx512Lanes& v, LaneMoments& m) {
  for (int h = 0; h < 2; ++h) {
    _mm512_store_si512(m.count + 8 * h, v.count[h]);
    _mm512_store_si512(m.nan_count + 8 * h, v.nan_count[h]);
    _mm512_store_si512(m.zero_count + 8 * h, v.zero_count[h]);
    _mm512_store_pd(m.sum_abs + 8 * h, v.sum_abs[h]);
    _mm512_store_pd(m.sum_sq + 8 * h, v.sum_sq[h]);
    _mm512_store_pd(m.max_abs + 8 * h, v.max_abs[h]);
    _mm512_store_pd(m.min_abs + 8 * h, v.min_abs[h]);
    _mm512_store_pd(m.sum_log + 8 * h, v.sum_log[h]);
  }
}

// sum_log += reproducibleLog(m) on the lanes of `use`: getexp/getmant are exact (subnormals
// included); +inf lanes are set to +inf as in the scalar function.
SCCL_TARGET_AVX512 SCCL_ALWAYS_INLINE __m512d avx512AddLog(__m512d sum, __m512d m, __mmask8 use) {
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d x = _mm512_mask_blend_pd(use, one, m);
  __m512d e = _mm512_getexp_pd(x);
  __m512d f = _mm512_getmant_pd(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  const __mmask8 big = _mm512_cmp_pd_mask(f, _mm512_set1_pd(kSqrt2), _CMP_GT_OQ);
  f = _mm512_mask_mul_pd(f, big, f, _mm512_set1_pd(0.5));
  e = _mm512_mask_add_pd(e, big, e, one);
  const __m512d s = _mm512_div_pd(_mm512_sub_pd(f, one), _mm512_add_pd(f, one));
  const __m512d z = _mm512_mul_pd(s, s);
  __m512d t = _mm512_set1_pd(kAtanhSeries[0]);
  for (size_t i = 1; i < std::size(kAtanhSeries); ++i) {
    t = _mm512_add_pd(_mm512_mul_pd(t, z), _mm512_set1_pd(kAtanhSeries[i]));
  }
  const __m512d log_f = _mm512_mul_pd(_mm512_add_pd(s, s), t);
  __m512d log = _mm512_add_pd(_mm512_mul_pd(e, _mm512_set1_pd(kLn2Hi)),
                              _mm512_add_pd(_mm512_mul_pd(e, _mm512_set1_pd(kLn2Lo)), log_f));
  const __m512d inf = _mm512_set1_pd(std::numeric_limits<double>::infinity());
  log = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, inf, _CMP_EQ_OQ), log, inf);
  return _mm512_mask_add_pd(sum, use, sum, log);
}

template <bool kLog>
SCCL_TARGET_AVX512 SCCL_ALWAYS_INLINE void avx512Add(Avx512Lanes& v, int h, __m512d x,
                                                     __m512d floor) {
  const __m512i one = _mm512_set1_epi64(1);
  const __m512d magnitude = _mm512_castsi512_pd(_mm512_and_epi64(
      _mm512_castpd_si512(x), _mm512_set1_epi64(std::numeric_limits<int64_t>::max())));
  const __mmask8 counted = _mm512_cmp_pd_mask(magnitude, floor, _CMP_GE_OQ);  // false for NaN
  const __mmask8 is_nan = _mm512_cmp_pd_mask(magnitude, magnitude, _CMP_UNORD_Q);
  const __mmask8 is_zero =
      _mm512_mask_cmp_pd_mask(counted, magnitude, _mm512_setzero_pd(), _CMP_EQ_OQ);
  v.count[h] = _mm512_mask_add_epi64(v.count[h], counted, v.count[h], one);
  v.nan_count[h] = _mm512_mask_add_epi64(v.nan_count[h], is_nan, v.nan_count[h], one);
  v.zero_count[h] = _mm512_mask_add_epi64(v.zero_count[h], is_zero, v.zero_count[h], one);
  v.sum_abs[h] = _mm512_mask_add_pd(v.sum_abs[h], counted, v.sum_abs[h], magnitude);
  v.sum_sq[h] =
      _mm512_mask_add_pd(v.sum_sq[h], counted, v.sum_sq[h], _mm512_mul_pd(magnitude, magnitude));
  v.max_abs[h] = _mm512_mask_max_pd(v.max_abs[h], counted, magnitude, v.max_abs[h]);
  v.min_abs[h] = _mm512_mask_min_pd(v.min_abs[h], counted, magnitude, v.min_abs[h]);
  if (kLog) {
    const __mmask8 positive =
        _mm512_mask_cmp_pd_mask(counted, magnitude, _mm512_setzero_pd(), _CMP_GT_OQ);
    v.sum_log[h] = avx512AddLog(v.sum_log[h], magnitude, positive);
  }
}

template <bool kLog>
SCCL_TARGET_AVX512 void addFloatsAvx512(LaneMoments& m, const float* x, size_t n, double floor) {
  Avx512Lanes v;
  avx512Load(v, m);
  const __m512d vfloor = _mm512_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    avx512Add<kLog>(v, 0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), vfloor);
    avx512Add<kLog>(v, 1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), vfloor);
  }
  avx512Store(v, m);
  addScalar<kLog>(m, x + full, n - full, floor);
}

template <bool kLog>
SCCL_TARGET_AVX512 void addDoublesAvx512(LaneMoments& m, const double* x, size_t n, double floor) {
  Avx512Lanes v;
  avx512Load(v, m);
  const __m512d vfloor = _mm512_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    avx512Add<kLog>(v, 0, _mm512_loadu_pd(x + i), vfloor);
    avx512Add<kLog>(v, 1, _mm512_loadu_pd(x + i + 8), vfloor);
  }
  avx512Store(v, m);
  addScalar<kLog>(m, x + full, n - full, floor);
}

SCCL_TARGET_AVX512 void widenFp16Avx512(const uint16_t* x, size_t n, float* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i,
                     _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  }
  widenFp16Scalar(x + i, n - i, out + i);
}

template <bool kLog>
void chunkLanesAvx512T(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n,
                       double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsAvx512<kLog>, addDoublesAvx512<kLog>, widenFp16Avx512);
}

}  // namespace

ChunkLanesFn chunkLanesAvx512(bool want_log) {
  return want_log ? chunkLanesAvx512T<true> : chunkLanesAvx512T<false>;
}

}  // namespace sccl::cpu_moments
