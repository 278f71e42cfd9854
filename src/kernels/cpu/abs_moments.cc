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
// Speed (26M float32, 2 threads, AVX-512): about memory bandwidth for the moments; the first
// version wrote the lanes with GCC vector types, whose 16-wide double comparisons GCC 12
// scalarised (one vcomisd per element), and ran 5-10x slower. sum ln|x| (want_log) is a second
// scalar loop with std::log per counted element.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
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
  LaneMoments() { std::fill(min_abs, min_abs + kLanes, std::numeric_limits<double>::infinity()); }
};

// The per-element definition every path implements, lane by lane: m = |x| (in double);
// NaN -> nan_count; m >= floor -> count, zero_count if m == 0, sum_abs += m, sum_sq += m * m
// (product rounded, then sum rounded: no FMA), max_abs = m > max ? m : max, min_abs = m < min ?
// m : min. A vector path that adds +0 (or takes max with 0) for a lane that is not counted gives
// the same bits, since every accumulator is >= +0.
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
}

// x[0, n) where x[0] sits in lane 0 (scalar path, and the tails of the vector paths).
template <typename T>
SCCL_ALWAYS_INLINE void addScalar(LaneMoments& m, const T* x, size_t n, double floor) {
  for (size_t i = 0; i < n; ++i) addOne(m, i % kLanes, static_cast<double>(x[i]), floor);
}

// AVX2: the sixteen lanes are four ymm registers of four doubles per accumulator.
struct Avx2Lanes {
  __m256i count[4], nan_count[4], zero_count[4];
  __m256d sum_abs[4], sum_sq[4], max_abs[4], min_abs[4];
};

SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void avx2Load(Avx2Lanes& v, const LaneMoments& m) {
  for (int q = 0; q < 4; ++q) {
    v.count[q] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m.count + 4 * q));
    v.nan_count[q] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m.nan_count + 4 * q));
    v.zero_count[q] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m.zero_count + 4 * q));
    v.sum_abs[q] = _mm256_load_pd(m.sum_abs + 4 * q);
    v.sum_sq[q] = _mm256_load_pd(m.sum_sq + 4 * q);
    v.max_abs[q] = _mm256_load_pd(m.max_abs + 4 * q);
    v.min_abs[q] = _mm256_load_pd(m.min_abs + 4 * q);
  }
}

SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void avx2Store(const Avx2Lanes& v, LaneMoments& m) {
  for (int q = 0; q < 4; ++q) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.count + 4 * q), v.count[q]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.nan_count + 4 * q), v.nan_count[q]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.zero_count + 4 * q), v.zero_count[q]);
    _mm256_store_pd(m.sum_abs + 4 * q, v.sum_abs[q]);
    _mm256_store_pd(m.sum_sq + 4 * q, v.sum_sq[q]);
    _mm256_store_pd(m.max_abs + 4 * q, v.max_abs[q]);
    _mm256_store_pd(m.min_abs + 4 * q, v.min_abs[q]);
  }
}

SCCL_TARGET_AVX2 SCCL_ALWAYS_INLINE void avx2Add(Avx2Lanes& v, int q, __m256d x, __m256d floor) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d magnitude = _mm256_andnot_pd(sign, x);
  const __m256d counted = _mm256_cmp_pd(magnitude, floor, _CMP_GE_OQ);  // false for NaN
  const __m256d is_nan = _mm256_cmp_pd(magnitude, magnitude, _CMP_UNORD_Q);
  const __m256d is_zero = _mm256_cmp_pd(magnitude, _mm256_setzero_pd(), _CMP_EQ_OQ);
  const __m256d counted_magnitude = _mm256_and_pd(magnitude, counted);      // +0 where not counted
  v.count[q] = _mm256_sub_epi64(v.count[q], _mm256_castpd_si256(counted));  // true is -1
  v.nan_count[q] = _mm256_sub_epi64(v.nan_count[q], _mm256_castpd_si256(is_nan));
  v.zero_count[q] =
      _mm256_sub_epi64(v.zero_count[q], _mm256_castpd_si256(_mm256_and_pd(counted, is_zero)));
  v.sum_abs[q] = _mm256_add_pd(v.sum_abs[q], counted_magnitude);
  v.sum_sq[q] = _mm256_add_pd(v.sum_sq[q], _mm256_mul_pd(counted_magnitude, counted_magnitude));
  v.max_abs[q] = _mm256_max_pd(counted_magnitude, v.max_abs[q]);  // m > max ? m : max
  const __m256d candidate =
      _mm256_blendv_pd(_mm256_set1_pd(std::numeric_limits<double>::infinity()), magnitude, counted);
  v.min_abs[q] = _mm256_min_pd(candidate, v.min_abs[q]);  // m < min ? m : min
}

SCCL_TARGET_AVX2 void addFloatsAvx2(LaneMoments& m, const float* x, size_t n, double floor) {
  Avx2Lanes v;
  avx2Load(v, m);
  const __m256d vfloor = _mm256_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    for (int q = 0; q < 4; ++q) avx2Add(v, q, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * q)), vfloor);
  }
  avx2Store(v, m);
  addScalar(m, x + full, n - full, floor);
}

SCCL_TARGET_AVX2 void addDoublesAvx2(LaneMoments& m, const double* x, size_t n, double floor) {
  Avx2Lanes v;
  avx2Load(v, m);
  const __m256d vfloor = _mm256_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    for (int q = 0; q < 4; ++q) avx2Add(v, q, _mm256_loadu_pd(x + i + 4 * q), vfloor);
  }
  avx2Store(v, m);
  addScalar(m, x + full, n - full, floor);
}

// AVX-512: two zmm registers of eight doubles per accumulator, lanes 0-7 and 8-15.
struct Avx512Lanes {
  __m512i count[2], nan_count[2], zero_count[2];
  __m512d sum_abs[2], sum_sq[2], max_abs[2], min_abs[2];
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
  }
}

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
}

SCCL_TARGET_AVX512 void addFloatsAvx512(LaneMoments& m, const float* x, size_t n, double floor) {
  Avx512Lanes v;
  avx512Load(v, m);
  const __m512d vfloor = _mm512_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    avx512Add(v, 0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), vfloor);
    avx512Add(v, 1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), vfloor);
  }
  avx512Store(v, m);
  addScalar(m, x + full, n - full, floor);
}

SCCL_TARGET_AVX512 void addDoublesAvx512(LaneMoments& m, const double* x, size_t n, double floor) {
  Avx512Lanes v;
  avx512Load(v, m);
  const __m512d vfloor = _mm512_set1_pd(floor);
  const size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) {
    avx512Add(v, 0, _mm512_loadu_pd(x + i), vfloor);
    avx512Add(v, 1, _mm512_loadu_pd(x + i + 8), vfloor);
  }
  avx512Store(v, m);
  addScalar(m, x + full, n - full, floor);
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

void addFloatsScalar(LaneMoments& m, const float* x, size_t n, double floor) {
  addScalar(m, x, n, floor);
}
void addDoublesScalar(LaneMoments& m, const double* x, size_t n, double floor) {
  addScalar(m, x, n, floor);
}

void chunkLanesScalar(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsScalar, addDoublesScalar, widenFp16Scalar);
}
void chunkLanesAvx2(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsAvx2, addDoublesAvx2, widenFp16Avx2);
}
void chunkLanesAvx512(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsAvx512, addDoublesAvx512, widenFp16Avx512);
}

double elementMagnitude(const void* x, scclDataType_t dtype, size_t i) {
  switch (dtype) {
    case scclFloat32: return std::fabs(static_cast<const float*>(x)[i]);
    case scclFloat64: return std::fabs(static_cast<const double*>(x)[i]);
    case scclFloat16: return std::fabs(fp16ToFloat(static_cast<const uint16_t*>(x)[i]));
    default: return std::fabs(bf16ToFloat(static_cast<const uint16_t*>(x)[i]));
  }
}

// sum ln|x| over counted non-zero elements of a chunk, same lane structure, scalar std::log.
double chunkSumLog(const void* x, scclDataType_t dtype, size_t n, double floor) {
  double lanes[kLanes] = {};
  for (size_t i = 0; i < n; ++i) {
    double magnitude = elementMagnitude(x, dtype, i);
    if (magnitude >= floor && magnitude > 0) lanes[i % kLanes] += std::log(magnitude);
  }
  double sum = lanes[0];
  for (size_t lane = 1; lane < kLanes; ++lane) sum += lanes[lane];
  return sum;
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
  }
  return chunk;
}

AbsMoments chunkMoments(CpuIsa isa, const void* x, scclDataType_t dtype, size_t n, double floor,
                        bool want_log) {
  LaneMoments lanes;
  if (isa == CpuIsa::Avx512) {
    chunkLanesAvx512(lanes, x, dtype, n, floor);
  } else if (isa == CpuIsa::Avx2) {
    chunkLanesAvx2(lanes, x, dtype, n, floor);
  } else {
    chunkLanesScalar(lanes, x, dtype, n, floor);
  }
  AbsMoments chunk = foldLanes(lanes);
  if (want_log) chunk.sum_log = chunkSumLog(x, dtype, n, floor);
  return chunk;
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
