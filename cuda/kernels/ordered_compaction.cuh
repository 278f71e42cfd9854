// Stable compaction on the GPU: the positions j in [0, n) where pred(j) holds, written ascending
// as begin + j, without appending atomics (so the order never depends on scheduling). Used by the
// threshold selection (select.cu) and the S2 encode's list of marked elements (sketch.cu).
// Three steps over tiles of 8192 positions:
//   1. maskTiles: each warp evaluates 32 consecutive positions per step (for a predicate that
//      loads x[j], one coalesced load) and keeps the ballot: one bit per position; each tile
//      writes its count;
//   2. cub::DeviceScan over the tile counts: each tile's offset;
//   3. emitTiles: each thread takes one mask word, a block scan of the words' bit counts gives its
//      place, and it writes its set bits' positions; tiles with none are skipped. The last
//      block also writes the total.
// The predicate is evaluated once per position (for a load, the data is read once); the mask
// costs 1/32 of a float32 vector, written once and read once. Positions past `capacity` are not
// written, while the total stays exact.
#pragma once

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <cstddef>
#include <cstdint>

namespace sccl::cuda_kernels::compaction {

constexpr unsigned kThreads = 256;                  // 8 warps; one mask word per thread
constexpr size_t kTile = size_t(kThreads) * 32;     // 8192 positions
constexpr unsigned kMaxBlocks = 2048;               // grid-stride over the tiles

inline size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }
__host__ __device__ inline size_t tilesFor(size_t n) { return (n + kTile - 1) / kTile; }
inline unsigned blocksFor(size_t tiles) {
  return unsigned(tiles == 0 ? 1 : tiles < kMaxBlocks ? tiles : kMaxBlocks);
}

// Word w of the mask holds positions [32 w, 32 w + 32), bit b = position 32 w + b; warp v of a
// tile covers its words 32 v .. 32 v + 31, so thread t writes word t.
template <typename Pred>
__global__ void __launch_bounds__(kThreads)
    maskTiles(Pred pred, size_t n, uint32_t* mask, uint64_t* tile_counts) {
  __shared__ unsigned warp_counts[kThreads / 32];
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const size_t tiles = tilesFor(n);
  const size_t words = (n + 31) / 32;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const size_t first = tile * kTile + size_t(warp) * 1024 + lane;
    uint32_t mine = 0;
#pragma unroll
    for (unsigned j = 0; j < 32; ++j) {
      const size_t p = first + size_t(j) * 32;
      const uint32_t word = __ballot_sync(0xffffffffu, p < n && pred(p));
      if (lane == j) mine = word;
    }
    const size_t w = tile * kThreads + threadIdx.x;
    if (w < words) mask[w] = mine;
    unsigned c = __popc(mine);
    for (unsigned offset = 16; offset > 0; offset >>= 1)
      c += __shfl_down_sync(0xffffffffu, c, offset);
    if (lane == 0) warp_counts[warp] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t sum = 0;
      for (unsigned v = 0; v < kThreads / 32; ++v) sum += warp_counts[v];
      tile_counts[tile] = sum;
    }
    __syncthreads();
  }
}

// A template (on the output's index type) so that every file including this header may launch it.
template <typename Index>
__global__ void __launch_bounds__(kThreads)
    emitTiles(const uint32_t* mask, size_t n, size_t begin, const uint64_t* tile_counts,
              const uint64_t* tile_offsets, Index* out, size_t capacity, uint64_t* total) {
  using BlockScan = cub::BlockScan<unsigned, kThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  const size_t tiles = tilesFor(n);
  const size_t words = (n + 31) / 32;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *total = tiles == 0 ? 0 : tile_offsets[tiles - 1] + tile_counts[tiles - 1];
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    if (tile_counts[tile] == 0 || tile_offsets[tile] >= capacity) continue;  // block-uniform
    const size_t w = tile * kThreads + threadIdx.x;
    uint32_t word = w < words ? mask[w] : 0u;
    unsigned before = 0;
    BlockScan(scan).ExclusiveSum(unsigned(__popc(word)), before);
    uint64_t position = tile_offsets[tile] + before;
    const Index first = Index(begin + w * 32);
    while (word != 0 && position < capacity) {
      out[position++] = first + (__ffs(int(word)) - 1);
      word &= word - 1;
    }
    __syncthreads();  // the scan's storage is reused by the next tile
  }
}

// Temporary storage of compact() for n positions.
inline cudaError_t compactTempBytes(size_t n, size_t* bytes) {
  const size_t tiles = tilesFor(n);
  size_t scan_bytes = 0;
  const cudaError_t status = cub::DeviceScan::ExclusiveSum(
      nullptr, scan_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int64_t>(tiles > 0 ? tiles : 1));
  *bytes = alignUp(((n + 31) / 32) * sizeof(uint32_t) + 1) + 2 * alignUp(tiles * 8 + 1) +
           alignUp(scan_bytes);
  return status;
}

// out[0, min(total, capacity)) = begin + the positions j < n where pred(j), ascending; *total
// (device memory) = how many qualify. temp: compactTempBytes(n) bytes.
template <typename Pred>
cudaError_t compact(void* temp, Pred pred, size_t n, size_t begin, int64_t* out, size_t capacity,
                    uint64_t* total, cudaStream_t stream) {
  if (n == 0) return cudaMemsetAsync(total, 0, sizeof(uint64_t), stream);
  const size_t tiles = tilesFor(n);
  const size_t mask_bytes = alignUp(((n + 31) / 32) * sizeof(uint32_t) + 1);
  const size_t tile_bytes = alignUp(tiles * 8 + 1);
  auto* mask = static_cast<uint32_t*>(temp);
  auto* tile_counts = reinterpret_cast<uint64_t*>(static_cast<char*>(temp) + mask_bytes);
  auto* tile_offsets =
      reinterpret_cast<uint64_t*>(static_cast<char*>(temp) + mask_bytes + tile_bytes);
  void* scan_temp = static_cast<char*>(temp) + mask_bytes + 2 * tile_bytes;
  size_t scan_bytes = 0;
  cudaError_t status = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, tile_counts,
                                                     tile_offsets, static_cast<int64_t>(tiles),
                                                     stream);
  if (status != cudaSuccess) return status;
  const unsigned grid = blocksFor(tiles);
  maskTiles<<<grid, kThreads, 0, stream>>>(pred, n, mask, tile_counts);
  status = cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, tile_counts, tile_offsets,
                                         static_cast<int64_t>(tiles), stream);
  if (status != cudaSuccess) return status;
  emitTiles<<<grid, kThreads, 0, stream>>>(mask, n, begin, tile_counts, tile_offsets, out,
                                           capacity, total);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_kernels::compaction
