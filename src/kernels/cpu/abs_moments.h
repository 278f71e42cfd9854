// Internals of the CPU moments of |x| (abs_moments.cc), shared by the driver and the per-ISA
// lane kernels (abs_moments_scalar.cc, abs_moments_avx2.cc, abs_moments_avx512.cc): the lanes,
// the per-element definition every path implements, the reproducible logarithm and the chunk
// loop over the element types. abs_moments.cc explains the scheme.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/shared/half.h"

#define SCCL_ALWAYS_INLINE inline __attribute__((always_inline))

namespace sccl::cpu_moments {

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

inline void widenFp16Scalar(const uint16_t* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = fp16ToFloat(x[i]);
}

inline void widenBf16(const uint16_t* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16ToFloat(x[i]);
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

// One chunk's lane moments with one ISA's loops (want_log picks the instantiation).
using ChunkLanesFn = void (*)(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n,
                              double floor);
ChunkLanesFn chunkLanesScalar(bool want_log);
ChunkLanesFn chunkLanesAvx2(bool want_log);
ChunkLanesFn chunkLanesAvx512(bool want_log);

}  // namespace sccl::cpu_moments
