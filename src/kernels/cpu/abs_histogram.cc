// Histogram of |x| on the bit patterns of the magnitudes (see kernels.h, absBitHistogram): the
// counting pass of the in-call density correction (algorithms/density_correction.cc).
//
// Each thread counts its share of the range into its own histogram, and the histograms are added
// afterwards: integer counts, so the result does not depend on the split or the thread count.
// Most elements lie below the window (only the tail around the threshold is binned), so the loop
// is a compare and a branch that is rarely taken; inside the window one shift and one increment.
#include <algorithm>
#include <bit>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

constexpr size_t kMinPartElements = size_t{1} << 16;

template <typename Value, typename Bits>
void countRange(const Value* x, size_t n, Bits magnitude_mask, uint64_t base_bits, unsigned shift,
                size_t bins, uint64_t* counts) {
  const Bits base = static_cast<Bits>(base_bits);
  for (size_t i = 0; i < n; ++i) {
    const Bits magnitude = std::bit_cast<Bits>(x[i]) & magnitude_mask;
    if (magnitude < base) continue;
    const uint64_t bin = uint64_t(magnitude - base) >> shift;
    ++counts[std::min<uint64_t>(bin, bins)];
  }
}

}  // namespace

scclResult_t absBitHistogram(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                             uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts) {
  if (dtype != scclFloat32 && dtype != scclFloat64) {
    return fail(scclInvalidArgument, "absBitHistogram: unsupported dtype %s (float32, float64)",
                dataTypeName(dtype));
  }
  const unsigned width = dtype == scclFloat32 ? 32 : 64;
  if (shift >= width) {
    return fail(scclInvalidArgument, "absBitHistogram: shift %u >= %u bits", shift, width);
  }
  const size_t count = end > begin ? end - begin : 0;
  const size_t nparts = std::max<size_t>(1, kernelPartCount(count, kMinPartElements));
  std::vector<uint64_t> partial(nparts * (bins + 1), 0);
  cpuThreadPool().parallelFor(nparts, [&](size_t p) {
    const size_t part_begin = begin + count * p / nparts;
    const size_t part_end = begin + count * (p + 1) / nparts;
    uint64_t* part_counts = partial.data() + p * (bins + 1);
    if (dtype == scclFloat32) {
      countRange(static_cast<const float*>(x) + part_begin, part_end - part_begin,
                 uint32_t{0x7fffffff}, base_bits, shift, bins, part_counts);
    } else {
      countRange(static_cast<const double*>(x) + part_begin, part_end - part_begin,
                 uint64_t{0x7fffffffffffffff}, base_bits, shift, bins, part_counts);
    }
  });
  std::fill(counts, counts + bins + 1, uint64_t{0});
  for (size_t p = 0; p < nparts; ++p)
    for (size_t j = 0; j <= bins; ++j) counts[j] += partial[p * (bins + 1) + j];
  return scclSuccess;
}

}  // namespace sccl::cpu
