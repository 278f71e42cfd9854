// Moments of |x| on the CPU, bitwise reproducible for any thread count and ISA.
//
// The range is cut into fixed chunks of kChunkElements counted from `begin`; the chunks' partial
// results are combined in chunk order, whatever thread computed them. Inside a chunk, element i
// goes to lane i % 16 of sixteen double accumulators, and the lanes are summed 0..15 at the end.
// The lane loop is written once with GCC vector types and compiled for each ISA (the vectors are
// split into zmm, ymm or xmm registers); every operation is an IEEE lane-wise operation, and this
// file is compiled with -ffp-contract=off so no ISA fuses x*x + s into an FMA. The result is
// therefore the same on every path. fp16/bf16 are first widened (exactly) to float32 in blocks.
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

typedef double V16d __attribute__((vector_size(kLanes * sizeof(double))));
typedef float V16f __attribute__((vector_size(kLanes * sizeof(float))));
typedef int64_t V16l __attribute__((vector_size(kLanes * sizeof(int64_t))));

struct LaneMoments {
  V16l count{}, nan_count{}, zero_count{};
  V16d sum_abs{}, sum_sq{}, max_abs{};
  V16d min_abs = V16d{} + std::numeric_limits<double>::infinity();
};

// Adds one group of 16 elements; lanes with valid == 0 are left untouched.
SCCL_ALWAYS_INLINE void addGroup(LaneMoments& m, const V16d& x, const V16l& valid, double floor) {
  V16d magnitude = (V16d)((V16l)x & std::numeric_limits<int64_t>::max());
  V16l is_nan = (magnitude != magnitude) & valid;
  V16l counted = (magnitude >= floor) & valid;                 // false for NaN
  V16d counted_magnitude = (V16d)((V16l)magnitude & counted);  // 0 where not counted
  m.count -= counted;                                          // comparisons give -1 for true
  m.nan_count -= is_nan;
  m.zero_count -= counted & (magnitude == 0.0);
  m.sum_abs += counted_magnitude;  // adding +0 leaves a non-negative sum unchanged
  m.sum_sq += counted_magnitude * counted_magnitude;
  m.max_abs = counted_magnitude > m.max_abs ? counted_magnitude : m.max_abs;
  m.min_abs = (counted & (magnitude < m.min_abs)) != 0 ? magnitude : m.min_abs;
}

SCCL_ALWAYS_INLINE V16d loadGroup(const float* x) {
  V16f group;
  std::memcpy(&group, x, sizeof(group));
  return __builtin_convertvector(group, V16d);
}

SCCL_ALWAYS_INLINE V16d loadGroup(const double* x) {
  V16d group;
  std::memcpy(&group, x, sizeof(group));
  return group;
}

// Elements x[0, n) where x[0] sits in lane 0.
template <typename T>
SCCL_ALWAYS_INLINE void addElements(LaneMoments& m, const T* x, size_t n, double floor) {
  const V16l all_lanes = V16l{} - 1;
  size_t full = n / kLanes * kLanes;
  for (size_t i = 0; i < full; i += kLanes) addGroup(m, loadGroup(x + i), all_lanes, floor);
  if (full == n) return;
  V16d padded{};
  V16l valid{};
  for (size_t lane = 0; lane < n - full; ++lane) {
    padded[lane] = static_cast<double>(x[full + lane]);
    valid[lane] = -1;
  }
  addGroup(m, padded, valid, floor);
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

// Lane moments of x[0, n) (a chunk) of any supported dtype; fp16 widens with `widen_fp16`.
SCCL_ALWAYS_INLINE void chunkLanes(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n,
                                   double floor,
                                   void (*widen_fp16)(const uint16_t*, size_t, float*)) {
  if (dtype == scclFloat32) return addElements(m, static_cast<const float*>(x), n, floor);
  if (dtype == scclFloat64) return addElements(m, static_cast<const double*>(x), n, floor);
  const uint16_t* halves = static_cast<const uint16_t*>(x);
  float widened[kWidenBlock];
  for (size_t i = 0; i < n; i += kWidenBlock) {
    size_t block = std::min(kWidenBlock, n - i);
    if (dtype == scclFloat16) {
      widen_fp16(halves + i, block, widened);
    } else {
      widenBf16(halves + i, block, widened);
    }
    addElements(m, widened, block, floor);
  }
}

void chunkLanesScalar(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, widenFp16Scalar);
}
SCCL_TARGET_AVX2 void chunkLanesAvx2(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n,
                                     double floor) {
  chunkLanes(m, x, dtype, n, floor, widenFp16Avx2);
}
SCCL_TARGET_AVX512 void chunkLanesAvx512(LaneMoments& m, const void* x, scclDataType_t dtype,
                                         size_t n, double floor) {
  chunkLanes(m, x, dtype, n, floor, widenFp16Avx512);
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
