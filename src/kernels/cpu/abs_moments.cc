// Moments of |x| on the CPU, bitwise reproducible for any thread count and ISA.
//
// The range is cut into fixed chunks of kChunkElements counted from `begin`; the chunks' partial
// results are combined in chunk order, whatever thread computed them. Inside a chunk, element i
// goes to lane i % 16 of sixteen double accumulators, and the lanes are summed 0..15 at the end.
// The per-element arithmetic (addOne, abs_moments.h) is written three times - scalar, AVX2 (four
// ymm of four lanes, abs_moments_avx2.cc) and AVX-512 (two zmm of eight lanes, masked,
// abs_moments_avx512.cc) - with the same IEEE operations on the same lanes in the same order;
// every kernel file is compiled with -ffp-contract=off so no path fuses m * m + s into an FMA. The
// result is therefore the same on every path. fp16/bf16 are first widened (exactly) to float32 in
// blocks. Speed (26M float32, 2 threads): AVX-512 about a plain streaming read, AVX2 ~1.5x; the
// first version wrote the lanes with GCC vector types, whose 16-wide double comparisons GCC 12
// scalarised (one vcomisd per element), and ran 5-10x slower. sum ln|x| (want_log) is computed
// in the same pass with reproducibleLog (below), vectorised, instead of a second scalar loop of
// std::log, which cost ~5 ns per element.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/abs_moments.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

using cpu_moments::ChunkLanesFn;
using cpu_moments::kChunkElements;
using cpu_moments::kLanes;
using cpu_moments::LaneMoments;

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
  const ChunkLanesFn lanes_of = isa == CpuIsa::Avx512 ? cpu_moments::chunkLanesAvx512(want_log)
                                : isa == CpuIsa::Avx2 ? cpu_moments::chunkLanesAvx2(want_log)
                                                      : cpu_moments::chunkLanesScalar(want_log);
  lanes_of(lanes, x, dtype, n, floor);
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
