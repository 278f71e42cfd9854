// Moments of |x| on the CPU, bitwise reproducible for any thread count and ISA.
//
// The range is cut into fixed chunks of kChunkElements counted from `begin`; the chunks' partial
// results are combined in chunk order, whatever thread computed them. Inside a chunk, element i
// goes to lane i % 16 of sixteen double accumulators, and the lanes are summed 0..15 at the end.
// The per-element arithmetic (addOne below) is written three times - scalar, AVX2 (four ymm of
// four lanes) and AVX-512 (two zmm of eight lanes, masked) - with the same IEEE operations on
// the same lanes in the same order; this file is compiled with -ffp-contract=off so no path
// fuses m * m + s into an FMA. The result is therefore the same on every path.
// fp16/bf16 are first widened (exactly) to float32 in blocks.
// Speed (26M float32, 2 threads): AVX-512 about a plain streaming read, AVX2 ~1.5x; the first
// version wrote the lanes with GCC vector types, whose 16-wide double comparisons GCC 12
// scalarised (one vcomisd per element), and ran 5-10x slower. sum ln|x| (want_log) is computed
// in the same pass with reproducibleLog (below), vectorised, instead of a second scalar loop of
// std::log, which cost ~5 ns per element.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/thread_pool.h"

#define SCCL_ALWAYS_INLINE inline __attribute__((always_inline))

namespace sccl::cpu {
namespace {

constexpr size_t kLanes = 16;
constexpr size_t kChunkElements = size_t{1} << 16;
// 16-bit data is widened to float32 this many elements at a time (a multiple of kLanes, so the
// lane of an element does not change).
constexpr size_t kWidenBlock = 2048;

// Sixteen lanes of partial results; lane l holds the elements with index % 16 == l of a chunk.
struct LaneMoments {
  alignas(64) int64_t count[kLanes] = {};
  alignas(64) int64_t nan_count[kLanes] = {};
  alignas(64) int64_t zero_count[kLanes] = {};
  alignas(64) double sum_abs[kLanes] = {};
  alignas(64) double sum_sq[kLanes] = {};
  alignas(64) double max_abs[kLanes] = {};
  alignas(64) double min_abs[kLanes];
  alignas(64) double sum_log[kLanes] = {};
  LaneMoments() { std::fill(min_abs, min_abs + kLanes, std::numeric_limits<double>::infinity()); }
};

// ln(m) for finite m > 0 with exact steps and +, -, *, / only, so that the scalar and vector
// paths agree to the bit (std::log and a vector log library need not): m = 2^e f with f in
// [1, 2) (exact: frexp, or getexp/getmant, or the exponent bits), f > sqrt(2) -> f / 2, e + 1
// (exact); s = (f - 1) / (f + 1), |s| <= 0.172; ln f = 2 s (1 + s^2/3 + ... + s^20/21) (series
// truncation < 1e-17); ln m = e ln2_hi + (e ln2_lo + ln f) with fdlibm's split of ln 2 (e ln2_hi
// is exact). Within a few ulp of std::log. +inf gives +inf.
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kAtanhSeries[] = {1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11,
                                   1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0};

SCCL_ALWAYS_INLINE double logFromParts(double e, double f) {
  const double s = (f - 1.0) / (f + 1.0);
  const double z = s * s;
  double t = kAtanhSeries[0];
  for (size_t i = 1; i < std::size(kAtanhSeries); ++i) t = t * z + kAtanhSeries[i];
  const double log_f = (s + s) * t;
  return e * kLn2Hi + (e * kLn2Lo + log_f);
}

SCCL_ALWAYS_INLINE double reproducibleLog(double m) {
  if (!(m < std::numeric_limits<double>::infinity())) return m;
  int exponent = 0;
  double f = std::frexp(m, &exponent) * 2.0;  // [1, 2)
  double e = static_cast<double>(exponent - 1);
  if (f > kSqrt2) {
    f = f * 0.5;
    e = e + 1.0;
  }
  return logFromParts(e, f);
}

// The per-element definition every path implements, lane by lane: m = |x| (in double);
// NaN -> nan_count; m >= floor -> count, zero_count if m == 0, sum_abs += m, sum_sq += m * m
// (product rounded, then sum rounded: no FMA), max_abs = m > max ? m : max, min_abs = m < min ?
// m : min. A vector path that adds +0 (or takes max with 0) for a lane that is not counted gives
// the same bits, since every accumulator is >= +0. With kLog, sum_log += reproducibleLog(m) for
// counted m > 0.
template <bool kLog>
SCCL_ALWAYS_INLINE void addOne(LaneMoments& m, size_t lane, double x, double floor) {
  const double magnitude = std::fabs(x);
  if (magnitude != magnitude) {
    ++m.nan_count[lane];
    return;
  }
  if (!(magnitude >= floor)) return;
  ++m.count[lane];
  if (magnitude == 0) ++m.zero_count[lane];
  m.sum_abs[lane] += magnitude;
  const double square = magnitude * magnitude;
  m.sum_sq[lane] += square;
  if (magnitude > m.max_abs[lane]) m.max_abs[lane] = magnitude;
  if (magnitude < m.min_abs[lane]) m.min_abs[lane] = magnitude;
  if (kLog && magnitude > 0) m.sum_log[lane] += reproducibleLog(magnitude);
}

// x[0, n) where x[0] sits in lane 0 (scalar path, and the tails of the vector paths).
template <bool kLog, typename T>
SCCL_ALWAYS_INLINE void addScalar(LaneMoments& m, const T* x, size_t n, double floor) {
  for (size_t i = 0; i < n; ++i) addOne<kLog>(m, i % kLanes, static_cast<double>(x[i]), floor);
}

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

void widenFp16Scalar(const uint16_t* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = fp16ToFloat(x[i]);
}

void widenBf16(const uint16_t* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16ToFloat(x[i]);
}

SCCL_TARGET_AVX2 void widenFp16Avx2(const uint16_t* x, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
  widenFp16Scalar(x + i, n - i, out + i);
}

SCCL_TARGET_AVX512 void widenFp16Avx512(const uint16_t* x, size_t n, float* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i,
                     _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  }
  widenFp16Scalar(x + i, n - i, out + i);
}

// Lane moments of x[0, n) (a chunk) of any supported dtype with one ISA's float and double loops;
// fp16 widens with `widen_fp16`.
SCCL_ALWAYS_INLINE void chunkLanes(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n,
                                   double floor,
                                   void (*add_floats)(LaneMoments&, const float*, size_t, double),
                                   void (*add_doubles)(LaneMoments&, const double*, size_t, double),
                                   void (*widen_fp16)(const uint16_t*, size_t, float*)) {
  if (dtype == scclFloat32) return add_floats(m, static_cast<const float*>(x), n, floor);
  if (dtype == scclFloat64) return add_doubles(m, static_cast<const double*>(x), n, floor);
  const uint16_t* halves = static_cast<const uint16_t*>(x);
  float widened[kWidenBlock];
  for (size_t i = 0; i < n; i += kWidenBlock) {
    size_t block = std::min(kWidenBlock, n - i);
    if (dtype == scclFloat16) {
      widen_fp16(halves + i, block, widened);
    } else {
      widenBf16(halves + i, block, widened);
    }
    add_floats(m, widened, block, floor);
  }
}

template <bool kLog>
void addFloatsScalar(LaneMoments& m, const float* x, size_t n, double floor) {
  addScalar<kLog>(m, x, n, floor);
}
template <bool kLog>
void addDoublesScalar(LaneMoments& m, const double* x, size_t n, double floor) {
  addScalar<kLog>(m, x, n, floor);
}

template <bool kLog>
void chunkLanesScalar(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsScalar<kLog>, addDoublesScalar<kLog>, widenFp16Scalar);
}
template <bool kLog>
void chunkLanesAvx2(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsAvx2<kLog>, addDoublesAvx2<kLog>, widenFp16Avx2);
}
template <bool kLog>
void chunkLanesAvx512(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsAvx512<kLog>, addDoublesAvx512<kLog>, widenFp16Avx512);
}

// The lanes folded in lane order into a result for one chunk.
AbsMoments foldLanes(const LaneMoments& m) {
  AbsMoments chunk;
  chunk.max_abs = 0;
  chunk.min_abs = std::numeric_limits<double>::infinity();
  for (size_t lane = 0; lane < kLanes; ++lane) {
    chunk.count += static_cast<uint64_t>(m.count[lane]);
    chunk.nan_count += static_cast<uint64_t>(m.nan_count[lane]);
    chunk.zero_count += static_cast<uint64_t>(m.zero_count[lane]);
    chunk.sum_abs = lane == 0 ? m.sum_abs[0] : chunk.sum_abs + m.sum_abs[lane];
    chunk.sum_sq = lane == 0 ? m.sum_sq[0] : chunk.sum_sq + m.sum_sq[lane];
    chunk.max_abs = std::max(chunk.max_abs, m.max_abs[lane]);
    chunk.min_abs = std::min(chunk.min_abs, m.min_abs[lane]);
    chunk.sum_log = lane == 0 ? m.sum_log[0] : chunk.sum_log + m.sum_log[lane];
  }
  return chunk;
}

AbsMoments chunkMoments(CpuIsa isa, const void* x, scclDataType_t dtype, size_t n, double floor,
                        bool want_log) {
  LaneMoments lanes;
  if (isa == CpuIsa::Avx512) {
    (want_log ? chunkLanesAvx512<true> : chunkLanesAvx512<false>)(lanes, x, dtype, n, floor);
  } else if (isa == CpuIsa::Avx2) {
    (want_log ? chunkLanesAvx2<true> : chunkLanesAvx2<false>)(lanes, x, dtype, n, floor);
  } else {
    (want_log ? chunkLanesScalar<true> : chunkLanesScalar<false>)(lanes, x, dtype, n, floor);
  }
  return foldLanes(lanes);
}

// Chunk results in chunk order into the final result.
AbsMoments combineChunks(const std::vector<AbsMoments>& chunks) {
  AbsMoments total;
  total.min_abs = std::numeric_limits<double>::infinity();
  for (const AbsMoments& chunk : chunks) {
    total.count += chunk.count;
    total.nan_count += chunk.nan_count;
    total.zero_count += chunk.zero_count;
    total.sum_abs += chunk.sum_abs;
    total.sum_sq += chunk.sum_sq;
    total.sum_log += chunk.sum_log;
    total.max_abs = std::max(total.max_abs, chunk.max_abs);
    total.min_abs = std::min(total.min_abs, chunk.min_abs);
  }
  if (total.count == 0) total.min_abs = 0;
  return total;
}

thread_local std::vector<AbsMoments> t_chunk_results;

}  // namespace

scclResult_t absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end, double floor,
                        bool want_log, AbsMoments* out) {
  if (!isFloatingType(dtype)) {
    return fail(scclInvalidArgument, "absMoments: unsupported dtype %s", dataTypeName(dtype));
  }
  const CpuIsa isa = activeCpuIsa();
  const size_t element_bytes = dataTypeSize(dtype);
  const size_t count = end - begin;
  const size_t nchunks = (count + kChunkElements - 1) / kChunkElements;
  if (nchunks == 0) {
    *out = AbsMoments{};
    return scclSuccess;
  }
  std::vector<AbsMoments>& chunks = t_chunk_results;
  chunks.assign(nchunks, AbsMoments{});
  const size_t nparts = std::min(nchunks, kernelPartCount(count, kChunkElements));
  cpuThreadPool().parallelFor(nparts, [&](size_t p) {
    for (size_t c = nchunks * p / nparts; c < nchunks * (p + 1) / nparts; ++c) {
      size_t chunk_begin = begin + c * kChunkElements;
      size_t n = std::min(kChunkElements, end - chunk_begin);
      const void* chunk_x = static_cast<const unsigned char*>(x) + chunk_begin * element_bytes;
      chunks[c] = chunkMoments(isa, chunk_x, dtype, n, floor, want_log);
    }
  });
  *out = combineChunks(chunks);
  return scclSuccess;
}

}  // namespace sccl::cpu
