// Threshold selection and the k-th largest magnitude on the GPU (the histogram: histogram.cu).
//
// Selection: magnitude_bits(x[i]) >= threshold_bits (kernels/shared/magnitude_bits.h, the CPU's
// own predicate), indices ascending: the exchange checks and the bitwise CPU-GPU comparison need
// a stable compaction, so no appending atomics. Three steps over tiles of 8192 elements:
//   1. maskAtOrAbove: each warp loads 32 consecutive elements per step (one coalesced 128-byte
//      load for float32) and keeps the ballot of the predicate: one bit per element, 1/32 of the
//      data's size for float32; each tile writes its count;
//   2. cub::DeviceScan over the tile counts (3174 tiles at 26M elements): each tile's offset;
//   3. emitIndices: each thread takes one mask word, a block scan of the words' bit counts gives
//      its place, and it writes the indices of its set bits; tiles with no hit are skipped.
// The data is read once (plus the mask twice). The first version was cub::DeviceSelect::If over
// a counting iterator whose predicate loaded x[i]: 145 us for 26M float32 on an H100 (716 GB/s,
// a quarter of a device copy), because each thread's items are consecutive there, so a warp's
// loads were strided. Positions past `capacity` are not written, while the count of every
// qualifying element stays exact.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr unsigned kSelectThreads = 256;                 // 8 warps; one mask word per thread
constexpr size_t kTileElements = size_t(kSelectThreads) * 32;  // 8192
constexpr unsigned kSelectBlocks = 2048;                  // grid-stride over the tiles

size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Step 1. Word w of the mask holds elements [32 w, 32 w + 32) of the range, bit j = element
// 32 w + j; warp v of a tile covers its words 32 v .. 32 v + 31, so thread t writes word t.
template <typename Bits>
__global__ void __launch_bounds__(kSelectThreads)
    maskAtOrAbove(const Bits* x, size_t n, Bits threshold_bits, uint32_t* mask,
                  uint64_t* tile_counts) {
  __shared__ unsigned warp_counts[kSelectThreads / 32];
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const size_t tiles = (n + kTileElements - 1) / kTileElements;
  const size_t words = (n + 31) / 32;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const size_t first = tile * kTileElements + size_t(warp) * 1024 + lane;
    uint32_t mine = 0;
#pragma unroll
    for (unsigned j = 0; j < 32; ++j) {
      const size_t i = first + size_t(j) * 32;
      const bool hit = i < n && magnitudeBits(x[i]) >= threshold_bits;
      const uint32_t word = __ballot_sync(0xffffffffu, hit);
      if (lane == j) mine = word;
    }
    const size_t w = tile * kSelectThreads + threadIdx.x;
    if (w < words) mask[w] = mine;
    unsigned c = __popc(mine);
    for (unsigned offset = 16; offset > 0; offset >>= 1) c += __shfl_down_sync(0xffffffffu, c, offset);
    if (lane == 0) warp_counts[warp] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t sum = 0;
      for (unsigned v = 0; v < kSelectThreads / 32; ++v) sum += warp_counts[v];
      tile_counts[tile] = sum;
    }
    __syncthreads();
  }
}

// Step 3. Indices are begin + position in the range.
__global__ void __launch_bounds__(kSelectThreads)
    emitIndices(const uint32_t* mask, size_t n, size_t begin, const uint64_t* tile_counts,
                const uint64_t* tile_offsets, int64_t* idx, size_t capacity) {
  using BlockScan = cub::BlockScan<unsigned, kSelectThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  const size_t tiles = (n + kTileElements - 1) / kTileElements;
  const size_t words = (n + 31) / 32;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    if (tile_counts[tile] == 0 || tile_offsets[tile] >= capacity) continue;  // block-uniform
    const size_t w = tile * kSelectThreads + threadIdx.x;
    uint32_t word = w < words ? mask[w] : 0u;
    unsigned before = 0;
    BlockScan(scan).ExclusiveSum(unsigned(__popc(word)), before);
    uint64_t position = tile_offsets[tile] + before;
    const int64_t first = int64_t(begin + w * 32);
    while (word != 0 && position < capacity) {
      idx[position++] = first + (__ffs(int(word)) - 1);
      word &= word - 1;
    }
    __syncthreads();  // the scan's storage is reused by the next tile
  }
}

__global__ void writeTotal(const uint64_t* tile_counts, const uint64_t* tile_offsets, size_t tiles,
                           uint64_t* count) {
  *count = tiles == 0 ? 0 : tile_offsets[tiles - 1] + tile_counts[tiles - 1];
}

template <typename Bits>
__global__ void gatherSelectedValues(const Bits* x, const int64_t* idx, const uint64_t* count,
                                     size_t capacity, Bits* val) {
  const size_t n = *count < capacity ? size_t(*count) : capacity;
  for (size_t j = globalThread(); j < n; j += gridThreads()) val[j] = x[idx[j]];
}

// Temporary storage: the mask, the tile counts and offsets, and the scan's own.
template <typename Bits>
cudaError_t selectWidth(void* temp, size_t* temp_bytes, const void* x, size_t begin, size_t end,
                        uint64_t threshold_bits, int64_t* idx, void* val, size_t capacity,
                        uint64_t* count, cudaStream_t stream) {
  const size_t n = end - begin;
  const size_t tiles = (n + kTileElements - 1) / kTileElements;
  const size_t mask_bytes = alignUp(((n + 31) / 32) * sizeof(uint32_t) + 1);
  const size_t tile_bytes = alignUp(tiles * sizeof(uint64_t) + 1);
  size_t scan_bytes = 0;
  cudaError_t status = cub::DeviceScan::ExclusiveSum(
      nullptr, scan_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int64_t>(tiles > 0 ? tiles : 1), stream);
  if (status != cudaSuccess) return status;
  if (temp == nullptr) {
    *temp_bytes = mask_bytes + 2 * tile_bytes + scan_bytes;
    return cudaSuccess;
  }
  if (n == 0) return cudaMemsetAsync(count, 0, sizeof(uint64_t), stream);
  auto* mask = static_cast<uint32_t*>(temp);
  auto* tile_counts = reinterpret_cast<uint64_t*>(static_cast<char*>(temp) + mask_bytes);
  auto* tile_offsets =
      reinterpret_cast<uint64_t*>(static_cast<char*>(temp) + mask_bytes + tile_bytes);
  void* scan_temp = static_cast<char*>(temp) + mask_bytes + 2 * tile_bytes;
  const unsigned grid = unsigned(tiles < kSelectBlocks ? tiles : kSelectBlocks);
  const Bits* data = static_cast<const Bits*>(x) + begin;
  maskAtOrAbove<<<grid, kSelectThreads, 0, stream>>>(data, n, static_cast<Bits>(threshold_bits),
                                                     mask, tile_counts);
  status = cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, tile_counts, tile_offsets,
                                         static_cast<int64_t>(tiles), stream);
  if (status != cudaSuccess) return status;
  emitIndices<<<grid, kSelectThreads, 0, stream>>>(mask, n, begin, tile_counts, tile_offsets, idx,
                                                   capacity);
  writeTotal<<<1, 1, 0, stream>>>(tile_counts, tile_offsets, tiles, count);
  if (val != nullptr) {
    gatherSelectedValues<<<gridFor(capacity), kThreads, 0, stream>>>(
        static_cast<const Bits*>(x), idx, count, capacity, static_cast<Bits*>(val));
  }
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
