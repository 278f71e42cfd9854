// Threshold selection and the k-th largest magnitude on the GPU (the histogram: histogram.cu).
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
#include <cub/device/device_radix_sort.cuh>

#include "cuda/dispatch.h"
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

// Keys are the magnitude patterns widened to 64 bits for every width, so there is one radix sort
// instantiation; end_bit = the width's bits keeps the passes to what the data has.
template <typename Bits>
__global__ void magnitudeKeys(const Bits* x, size_t begin, size_t n, uint64_t* keys) {
  for (size_t j = globalThread(); j < n; j += gridThreads()) keys[j] = magnitudeBits(x[begin + j]);
}

__global__ void readKth(const uint64_t* sorted, uint64_t k, uint64_t* kth_bits) {
  *kth_bits = sorted[k - 1];
}

// Sorts the magnitude patterns descending (NaN patterns first, as the CPU's order) and reads the
// k-th. Temporary storage: two key arrays plus CUB's.
template <typename Bits>
cudaError_t kthWidth(void* temp, size_t* temp_bytes, const void* x, size_t begin, size_t end,
                     uint64_t k, uint64_t* kth_bits, cudaStream_t stream) {
  const size_t n = end - begin;
  const size_t keys_bytes = ((n * sizeof(uint64_t) + 255) / 256) * 256;
  const int end_bit = int(sizeof(Bits) * 8);
  size_t cub_bytes = 0;
  cudaError_t status = cub::DeviceRadixSort::SortKeysDescending(
      nullptr, cub_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int64_t>(n), 0, end_bit, stream);
  if (status != cudaSuccess) return status;
  if (temp == nullptr) {
    *temp_bytes = 2 * keys_bytes + cub_bytes;
    return cudaSuccess;
  }
  auto* keys = static_cast<uint64_t*>(temp);
  auto* sorted = reinterpret_cast<uint64_t*>(static_cast<char*>(temp) + keys_bytes);
  void* cub_temp = static_cast<char*>(temp) + 2 * keys_bytes;
  magnitudeKeys<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const Bits*>(x), begin, n, keys);
  status = cub::DeviceRadixSort::SortKeysDescending(cub_temp, cub_bytes, keys, sorted,
                                                    static_cast<int64_t>(n), 0, end_bit, stream);
  if (status != cudaSuccess) return status;
  readKth<<<1, 1, 0, stream>>>(sorted, k, kth_bits);
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
