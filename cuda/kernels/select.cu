// Threshold selection, k-th largest magnitude and the magnitude histogram on the GPU.
//
// Selection: one pass of cub::DeviceSelect::If over a counting iterator of [begin, end) with the
// predicate magnitude_bits(x[i]) >= threshold_bits (kernels/shared/magnitude_bits.h, the CPU's own
// predicate). Chosen over a fused kernel with warp-aggregated atomics because DeviceSelect is a
// stable compaction: indices come out ascending and identical on every run, which the exchange
// checks and the bitwise CPU-GPU comparison need; atomics would append in a different order each
// run and then need a sort. DeviceSelect is a single decoupled-look-back scan, i.e. one read of
// the data; measuring it against a fused kernel needs a GPU (docs/gpu.md). The output iterator
// drops positions past `capacity`, so the caller's buffer is never overrun while the count of all
// qualifying elements is still exact.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <iterator>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

// An output iterator that writes position p only when p < capacity.
struct CappedIndexOutput {
  using value_type = int64_t;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using iterator_category = std::random_access_iterator_tag;

  struct Slot {
    int64_t* at;
    __host__ __device__ Slot& operator=(int64_t value) {
      if (at != nullptr) *at = value;
      return *this;
    }
  };
  using reference = Slot;

  int64_t* out;
  difference_type position;
  difference_type capacity;

  __host__ __device__ Slot operator[](difference_type i) const {
    const difference_type p = position + i;
    return Slot{p < capacity ? out + p : nullptr};
  }
  __host__ __device__ Slot operator*() const { return (*this)[0]; }
  __host__ __device__ CappedIndexOutput operator+(difference_type n) const {
    return CappedIndexOutput{out, position + n, capacity};
  }
};

template <typename Bits>
struct AtOrAbove {
  const Bits* x;
  Bits threshold_bits;
  __device__ bool operator()(int64_t i) const { return magnitudeBits(x[i]) >= threshold_bits; }
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
  const Bits* data = static_cast<const Bits*>(x);
  thrust::counting_iterator<int64_t> first(static_cast<int64_t>(begin));
  CappedIndexOutput out{idx, 0, static_cast<std::ptrdiff_t>(capacity)};
  cudaError_t status =
      cub::DeviceSelect::If(temp, *temp_bytes, first, out, count, static_cast<int64_t>(end - begin),
                            AtOrAbove<Bits>{data, static_cast<Bits>(threshold_bits)}, stream);
  if (status != cudaSuccess || temp == nullptr || val == nullptr) return status;
  gatherSelectedValues<<<gridFor(capacity), kThreads, 0, stream>>>(data, idx, count, capacity,
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

template <typename Bits>
__global__ void histogramKernel(const Bits* x, size_t begin, size_t end, uint64_t base_bits,
                                unsigned shift, size_t bins, unsigned long long* counts) {
  for (size_t i = begin + globalThread(); i < end; i += gridThreads()) {
    const uint64_t b = magnitudeBits(x[i]);
    if (b < base_bits) continue;
    const uint64_t bin = (b - base_bits) >> shift;
    atomicAdd(counts + (bin < bins ? bin : bins), 1ull);
  }
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

cudaError_t absBitHistogram(const void* x, size_t element_bytes, size_t begin, size_t end,
                            uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts,
                            cudaStream_t stream) {
  cudaError_t status = cudaMemsetAsync(counts, 0, (bins + 1) * sizeof(uint64_t), stream);
  if (status != cudaSuccess || end <= begin) return status;
  auto* out = reinterpret_cast<unsigned long long*>(counts);
  const unsigned grid = gridFor(end - begin);
  // Integer counts: the atomics' order changes nothing.
  if (element_bytes == 4) {
    histogramKernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint32_t*>(x), begin, end,
                                                   base_bits, shift, bins, out);
  } else {
    histogramKernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint64_t*>(x), begin, end,
                                                   base_bits, shift, bins, out);
  }
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
