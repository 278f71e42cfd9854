// Threshold selection and the k-th largest magnitude (radix select, below) on the GPU (the
// histogram: histogram.cu).
//
// Selection: magnitude_bits(x[i]) >= threshold_bits (kernels/shared/magnitude_bits.h, the CPU's
// own predicate), indices ascending: the exchange checks and the bitwise CPU-GPU comparison need
// a stable compaction (ordered_compaction.cuh: warp ballots into a bit mask, a scan of tile
// counts, an ordered emit), which reads the data once. The first version was
// cub::DeviceSelect::If over a counting iterator whose predicate loaded x[i]: 145 us for 26M
// float32 on an H100 (716 GB/s, a quarter of a device copy), because each thread's items are
// consecutive there, so a warp's loads were strided; the compaction's mask pass runs at about
// the read bandwidth (39.5 us, ncu). Positions past `capacity` are not written, while the count
// of every qualifying element stays exact.
#include "cuda/dispatch.h"
#include "cuda/kernels/capped_selection.cuh"
#include "cuda/kernels/device_common.cuh"
#include "cuda/kernels/ordered_compaction.cuh"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

template <typename Bits>
struct AtOrAbove {
  const Bits* x;
  Bits threshold_bits;
  __device__ bool operator()(size_t j) const { return magnitudeBits(x[j]) >= threshold_bits; }
};

// The threshold a kernel chose (SIDCo's count check), read where the predicate runs: one word,
// the same for every thread, served from the cache after the first load.
template <typename Bits>
struct AtOrAboveWord {
  const Bits* x;
  const uint64_t* threshold_word;
  __device__ bool operator()(size_t j) const {
    return magnitudeBits(x[j]) >= static_cast<Bits>(*threshold_word);
  }
};

template <typename Bits>
__global__ void gatherSelectedValues(const Bits* x, const int64_t* idx, const uint64_t* count,
                                     size_t capacity, Bits* val) {
  const size_t n = *count < capacity ? size_t(*count) : capacity;
  for (size_t j = globalThread(); j < n; j += gridThreads()) val[j] = x[idx[j]];
}

template <typename Bits>
cudaError_t selectWidth(void* temp, size_t* temp_bytes, const void* x, size_t begin, size_t end,
                        uint64_t threshold_bits, int64_t* idx, void* val, size_t capacity,
                        uint64_t* count, cudaStream_t stream) {
  const size_t n = end - begin;
  if (temp == nullptr) return compaction::compactTempBytes(n, temp_bytes);
  const Bits* data = static_cast<const Bits*>(x);
  const cudaError_t status =
      compaction::compact(temp, AtOrAbove<Bits>{data + begin, static_cast<Bits>(threshold_bits)},
                          n, begin, idx, capacity, count, stream);
  if (status != cudaSuccess || val == nullptr || n == 0) return status;
  // Bounded by the selection (*count), not by the capacity's grid.
  const size_t likely = capacity < n / 16 + 1 ? capacity : n / 16 + 1;
  gatherSelectedValues<<<gridFor(likely), kThreads, 0, stream>>>(data, idx, count, capacity,
                                                                 static_cast<Bits*>(val));
  return cudaGetLastError();
}

// The k-th largest magnitude pattern by radix select (capped_selection.cuh's first step: 11 bits
// per pass from the top, a shared-memory histogram of the keys that match the digits found so
// far, one block picking the digit that holds the k-th): three passes over the range for float32
// (31 key bits), no key array and no sort. NaN patterns lie above +inf's, the CPU's order. The
// first version radix-sorted all the range's keys widened to 64 bits, about 1.2 ms of a top-k
// call at 26M float32 on an H200.
template <typename Bits>
struct RangeMagnitudes {
  const Bits* x;
  size_t begin;
  struct Resolved {
    const Bits* x;
    size_t begin;
    __device__ bool key(size_t j, uint64_t* k) const {
      *k = magnitudeBits(x[begin + j]);
      return true;
    }
  };
  __device__ Resolved resolve() const { return {x, begin}; }
};

__global__ void readCut(const capped::CutState* state, uint64_t* kth_bits) {
  *kth_bits = state->prefix;
}

template <typename Bits>
cudaError_t kthWidth(void* temp, size_t* temp_bytes, const void* x, size_t begin, size_t end,
                     uint64_t k, uint64_t* kth_bits, cudaStream_t stream) {
  const size_t n = end - begin;
  capped::Carver carve{static_cast<char*>(temp)};
  capped::CutState* state = carve.take<capped::CutState>(1);
  unsigned long long* hist = carve.take<unsigned long long>(capped::kDigitBins);
  if (temp == nullptr) {
    *temp_bytes = carve.used;
    return cudaSuccess;
  }
  // Magnitudes have the sign bit cleared: 15, 31 or 63 key bits.
  const unsigned key_bits = unsigned(sizeof(Bits) * 8 - 1);
  const RangeMagnitudes<Bits> keys{static_cast<const Bits*>(x), begin};
  const unsigned grid = capped::blocksFor((n + capped::kThreads - 1) / capped::kThreads,
                                          capped::kHistogramBlocks);
  bool first = true;
  for (unsigned hi = key_bits; hi > 0;) {
    const unsigned lo = hi > capped::kDigitBits ? hi - capped::kDigitBits : 0;
    cudaError_t status =
        cudaMemsetAsync(hist, 0, capped::kDigitBins * sizeof(unsigned long long), stream);
    if (status != cudaSuccess) return status;
    capped::cutHistogram<<<grid, capped::kThreads, 0, stream>>>(keys, n, state, lo, hi, first,
                                                                hist);
    // capacity k with need_cut: the k-th largest key is found even when k = n.
    capped::cutResolve<<<1, capped::kThreads, 0, stream>>>(hist, lo, hi, first, size_t(k), true,
                                                           state);
    first = false;
    hi = lo;
  }
  readCut<<<1, 1, 0, stream>>>(state, kth_bits);
  return cudaGetLastError();
}

}  // namespace

cudaError_t selectAbove(void* temp, size_t* temp_bytes, const void* x, size_t element_bytes,
                        size_t begin, size_t end, uint64_t threshold_bits, int64_t* idx, void* val,
                        size_t capacity, uint64_t* count, cudaStream_t stream) {
  switch (element_bytes) {
    case 2:
      return selectWidth<uint16_t>(temp, temp_bytes, x, begin, end, threshold_bits, idx, val,
                                   capacity, count, stream);
    case 4:
      return selectWidth<uint32_t>(temp, temp_bytes, x, begin, end, threshold_bits, idx, val,
                                   capacity, count, stream);
    default:
      return selectWidth<uint64_t>(temp, temp_bytes, x, begin, end, threshold_bits, idx, val,
                                   capacity, count, stream);
  }
}

cudaError_t selectAboveWord(void* temp, size_t* temp_bytes, const void* x, size_t element_bytes,
                            size_t begin, size_t end, const uint64_t* threshold_word, int64_t* idx,
                            size_t capacity, uint64_t* count, cudaStream_t stream) {
  const size_t n = end - begin;
  if (temp == nullptr) return compaction::compactTempBytes(n, temp_bytes);
  if (element_bytes == 4) {
    const auto* data = static_cast<const uint32_t*>(x) + begin;
    return compaction::compact(temp, AtOrAboveWord<uint32_t>{data, threshold_word}, n, begin, idx,
                               capacity, count, stream);
  }
  const auto* data = static_cast<const uint64_t*>(x) + begin;
  return compaction::compact(temp, AtOrAboveWord<uint64_t>{data, threshold_word}, n, begin, idx,
                             capacity, count, stream);
}

cudaError_t kthLargestAbsBits(void* temp, size_t* temp_bytes, const void* x, size_t element_bytes,
                              size_t begin, size_t end, uint64_t k, uint64_t* kth_bits,
                              cudaStream_t stream) {
  switch (element_bytes) {
    case 2: return kthWidth<uint16_t>(temp, temp_bytes, x, begin, end, k, kth_bits, stream);
    case 4: return kthWidth<uint32_t>(temp, temp_bytes, x, begin, end, k, kth_bits, stream);
    default: return kthWidth<uint64_t>(temp, temp_bytes, x, begin, end, k, kth_bits, stream);
  }
}

}  // namespace sccl::cuda_dispatch
