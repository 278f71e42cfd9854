// writeDense on the CPU (kernels.h): the dense output of a sparse all-reduce, zeros except the
// aggregated entries, written once.
//
// fillZero and then scatterValues would zero the whole output (evicting it from the cache on a
// large vector) and then miss the cache once more at every entry. Here each part of the output
// is zeroed block by block, and the entries that fall in a block are scattered right after, while
// the block is in L1/L2. The entries come as a few ascending runs (the exchange concatenates one
// ascending slice per rank, or merges them into one), so a cursor per run finds each block's
// entries without sorting. The scatter of a block's entries is scatterValues itself on that span
// (same conversion and rounding), so the result is bit for bit fillZero + scatterValues. With
// many runs (more than kMaxRuns, e.g. an unsorted list) it is exactly those two calls.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/streaming_zero.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

// Output elements zeroed before their entries are scattered (64 KiB of float32).
constexpr size_t kBlockElements = size_t{1} << 14;
// A part's memset must outlast the pool round trip by a wide margin.
constexpr size_t kMinPartElements = size_t{1} << 18;
// Cursors per block: past this many runs the two plain calls are cheaper.
constexpr size_t kMaxRuns = 256;

struct Run {
  size_t begin, end;  // entries [begin, end) of the list, ascending indices
};

// The list's ascending runs, or an empty vector when there are more than kMaxRuns.
std::vector<Run> ascendingRuns(const int64_t* idx, size_t n) {
  std::vector<Run> runs;
  size_t start = 0;
  for (size_t j = 1; j <= n; ++j) {
    if (j == n || idx[j] <= idx[j - 1]) {
      if (runs.size() == kMaxRuns) return {};
      runs.push_back({start, j});
      start = j;
    }
  }
  return runs;
}

bool supportedPair(scclDataType_t dst_dtype, scclDataType_t val_dtype) {
  if (val_dtype == scclFloat64) return dst_dtype == scclFloat64;
  return val_dtype == scclFloat32 &&
         (dst_dtype == scclFloat32 || dst_dtype == scclFloat16 || dst_dtype == scclBfloat16);
}

}  // namespace

scclResult_t writeDense(void* dst, scclDataType_t dst_dtype, size_t count, const int64_t* idx,
                        const void* vals, scclDataType_t val_dtype, size_t n, double scale) {
  if (!supportedPair(dst_dtype, val_dtype)) {
    return fail(scclInvalidArgument, "writeDense: %s values into %s is not supported",
                dataTypeName(val_dtype), dataTypeName(dst_dtype));
  }
  const size_t width = dataTypeSize(dst_dtype);
  const size_t value_width = dataTypeSize(val_dtype);
  std::vector<Run> runs = ascendingRuns(idx, n);
  if (n > 0 && runs.empty()) {
    SCCL_CHECK(fillZero(dst, count * width));
    return scatterValues(dst, dst_dtype, idx, vals, val_dtype, n, scale);
  }
  // Streaming stores write the zeros without reading the lines first; the entries scattered
  // after them then miss the cache, which costs less than reading every line (k' << count).
  const CpuIsa isa = activeCpuIsa();
  const bool streaming = isa != CpuIsa::Scalar;
  const size_t nparts = kernelPartCount(count, kMinPartElements);
  const size_t blocks = (count + kBlockElements - 1) / kBlockElements;
  std::vector<scclResult_t> results(nparts, scclSuccess);
  cpuThreadPool().parallelFor(nparts, [&](size_t p) {
    const size_t first = blocks * p / nparts, last = blocks * (p + 1) / nparts;
    // Each run's cursor at its first entry inside this part.
    std::vector<size_t> cursor(runs.size());
    for (size_t r = 0; r < runs.size(); ++r) {
      const int64_t from = static_cast<int64_t>(first * kBlockElements);
      cursor[r] = size_t(std::lower_bound(idx + runs[r].begin, idx + runs[r].end, from) - idx);
    }
    unsigned char* out = static_cast<unsigned char*>(dst);
    for (size_t b = first; b < last; ++b) {
      const size_t begin = b * kBlockElements, end = std::min(count, begin + kBlockElements);
      if (streaming) {
        zeroStreamingFor(isa, out + begin * width, out + end * width);
        _mm_sfence();  // ordered before this block's entries are scattered
      } else {
        std::memset(out + begin * width, 0, (end - begin) * width);
      }
      for (size_t r = 0; r < runs.size(); ++r) {
        size_t j = cursor[r];
        while (j < runs[r].end && idx[j] < static_cast<int64_t>(end)) ++j;
        if (j == cursor[r]) continue;
        const unsigned char* span =
            static_cast<const unsigned char*>(vals) + cursor[r] * value_width;
        const scclResult_t result =
            scatterValues(dst, dst_dtype, idx + cursor[r], span, val_dtype, j - cursor[r], scale);
        if (result != scclSuccess) results[p] = result;
        cursor[r] = j;
      }
    }
  });
  for (scclResult_t result : results) SCCL_CHECK(result);
  return scclSuccess;
}

}  // namespace sccl::cpu
