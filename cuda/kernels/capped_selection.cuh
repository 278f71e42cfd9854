// Capped selection on the GPU, without sorting and without a host count: of the positions j in
// [0, items) whose key qualifies (Keys, below), all of them when there are at most `capacity`,
// else the capacity largest keys with the ties at the cut-off to the lowest positions (the CPU's
// trimSelection). Used by the sync-free slot (sync_free.cu) and S2's block selection
// (top_blocks.cu).
//  1. radix select of the cut-off K, 11 bits per pass from the top: each pass counts the next
//     digit of the qualifying keys that match the digits found so far (a shared-memory histogram
//     of 2048 bins, then one block picks the digit that holds the wanted entry); the first pass
//     also counts the qualifying positions, and when they fit (and the caller does not need K)
//     the later passes return at once;
//  2. one masking pass, two bits per position from warp ballots: "above" (qualifies and is above
//     K, or every qualifying position when they fit) and "tie" (equal to K);
//  3. scans of both masks' tile counts, then each kept position's place is (above before it) +
//     min(ties before it, ties still needed), handed to Emit in one call per kept position.
// Every size is fixed by `items` and the capacity, so a CUDA graph can hold the steps.
#pragma once

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/device_common.cuh"

namespace sccl::cuda_kernels::capped {

constexpr unsigned kDigitBits = 11;
constexpr unsigned kDigitBins = 1u << kDigitBits;
constexpr unsigned kThreads = 256;
constexpr size_t kTile = size_t(kThreads) * 32;  // positions per tile: one mask word per thread
constexpr unsigned kMaxBlocks = 2048;
constexpr unsigned kHistogramBlocks = 1024;

// What the radix select has found (device memory, rewritten by every selection).
struct CutState {
  unsigned long long total;      // qualifying positions
  unsigned long long remaining;  // entries still to take among those matching `prefix`
  unsigned long long prefix;     // K's digits found so far (all of K after the last pass)
  unsigned int take_all;         // total <= capacity: every qualifying position
  unsigned int searching;        // the later passes still look for K
};

// Keys: a copyable description with `__device__ Resolved resolve() const`, where Resolved has
// `__device__ bool key(size_t j, uint64_t* k) const` (false: position j does not qualify), so that
// what a selection reads from device memory once (a range, a threshold) is read once per thread.

template <typename Keys>
__global__ void __launch_bounds__(kThreads)
    cutHistogram(Keys keys, size_t items, const CutState* state, unsigned lo, unsigned hi,
                 bool first, unsigned long long* hist) {
  if (!first && state->searching == 0) return;
  __shared__ unsigned counts[kDigitBins];
  const unsigned bins = 1u << (hi - lo);
  for (unsigned j = threadIdx.x; j < bins; j += blockDim.x) counts[j] = 0;
  __syncthreads();
  const auto resolved = keys.resolve();
  const uint64_t prefix_high = first ? 0 : (state->prefix >> hi);
  for (size_t j = globalThread(); j < items; j += gridThreads()) {
    uint64_t m = 0;
    if (!resolved.key(j, &m) || (m >> hi) != prefix_high) continue;
    atomicAdd(&counts[(m >> lo) & (bins - 1)], 1u);
  }
  __syncthreads();
  for (unsigned j = threadIdx.x; j < bins; j += blockDim.x) {
    if (counts[j] != 0) atomicAdd(hist + j, static_cast<unsigned long long>(counts[j]));
  }
}

// One block: the digit whose bin holds the wanted-th largest entry, from the top bin down. Thread t
// sums the bins of its chunk (chunk 0 = the highest bins); a block scan gives the entries above
// each chunk, and the one thread whose chunk holds the entry walks it.
// static: every file that includes this header gets its own copy of this (non-template) kernel.
static __global__ void __launch_bounds__(kThreads)
    cutResolve(const unsigned long long* hist, unsigned lo, unsigned hi, bool first,
               size_t capacity, bool need_cut, CutState* state) {
  using BlockScan = cub::BlockScan<unsigned long long, kThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  if (!first && state->searching == 0) return;
  const unsigned bins = 1u << (hi - lo);
  const unsigned per = (bins + kThreads - 1) / kThreads;
  unsigned long long wanted = first ? 0 : state->remaining;
  unsigned long long mine = 0;
  for (unsigned u = 0; u < per; ++u) {
    const unsigned d = threadIdx.x * per + u;
    if (d < bins) mine += hist[bins - 1 - d];
  }
  unsigned long long above = 0, total = 0;
  BlockScan(scan).ExclusiveSum(mine, above, total);
  if (first) {
    const bool take_all = total <= capacity;
    const bool searching = total > 0 && (!take_all || need_cut);
    if (threadIdx.x == 0) {
      state->total = total;
      state->take_all = take_all ? 1u : 0u;
      state->searching = searching ? 1u : 0u;
    }
    if (!searching) return;
    wanted = total < capacity ? total : capacity;
  }
  if (above < wanted && wanted <= above + mine) {
    unsigned long long before = above;
    for (unsigned u = 0; u < per; ++u) {
      const unsigned d = threadIdx.x * per + u;
      if (d >= bins) break;
      const unsigned bin = bins - 1 - d;
      const unsigned long long c = hist[bin];
      if (wanted <= before + c) {
        const unsigned long long digit = static_cast<unsigned long long>(bin) << lo;
        state->prefix = first ? digit : (state->prefix | digit);
        state->remaining = wanted - before;
        break;
      }
      before += c;
    }
  }
}

// Two bits per position: above (kept whatever the order) and tie (== K, kept by position order);
// each tile's counts of both.
template <typename Keys>
__global__ void __launch_bounds__(kThreads)
    cutMask(Keys keys, size_t items, const CutState* state, uint32_t* above_mask,
            uint32_t* tie_mask, uint64_t* above_counts, uint64_t* tie_counts) {
  __shared__ unsigned warp_counts[2][kThreads / 32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const auto resolved = keys.resolve();
  const bool take_all = state->take_all != 0;
  const uint64_t cut = state->prefix;
  const size_t tiles = (items + kTile - 1) / kTile;
  const size_t words = (items + 31) / 32;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const size_t first = tile * kTile + size_t(warp) * 1024 + lane;
    uint32_t my_above = 0, my_tie = 0;
#pragma unroll
    for (unsigned j = 0; j < 32; ++j) {
      const size_t p = first + size_t(j) * 32;
      uint64_t m = 0;
      const bool in = p < items && resolved.key(p, &m);
      const uint32_t a = __ballot_sync(0xffffffffu, in && (take_all || m > cut));
      const uint32_t t = __ballot_sync(0xffffffffu, in && !take_all && m == cut);
      if (lane == j) {
        my_above = a;
        my_tie = t;
      }
    }
    const size_t w = tile * kThreads + threadIdx.x;
    if (w < words) {
      above_mask[w] = my_above;
      tie_mask[w] = my_tie;
    }
    unsigned ca = __popc(my_above), ct = __popc(my_tie);
    for (unsigned offset = 16; offset > 0; offset >>= 1) {
      ca += __shfl_down_sync(0xffffffffu, ca, offset);
      ct += __shfl_down_sync(0xffffffffu, ct, offset);
    }
    if (lane == 0) {
      warp_counts[0][warp] = ca;
      warp_counts[1][warp] = ct;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t sa = 0, st = 0;
      for (unsigned v = 0; v < kThreads / 32; ++v) {
        sa += warp_counts[0][v];
        st += warp_counts[1][v];
      }
      above_counts[tile] = sa;
      tie_counts[tile] = st;
    }
    __syncthreads();
  }
}

// Each kept position's place: (above before it) + min(ties before it, ties needed).
template <typename Emit>
__global__ void __launch_bounds__(kThreads)
    cutEmit(const uint32_t* above_mask, const uint32_t* tie_mask, size_t items,
            const uint64_t* above_counts, const uint64_t* tie_counts,
            const uint64_t* above_offsets, const uint64_t* tie_offsets, const CutState* state,
            size_t capacity, Emit emit) {
  using BlockScan = cub::BlockScan<unsigned, kThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  const uint64_t need = state->take_all ? 0 : state->remaining;
  const size_t tiles = (items + kTile - 1) / kTile;
  const size_t words = (items + 31) / 32;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    if (above_counts[tile] == 0 && tie_counts[tile] == 0) continue;  // block-uniform
    const size_t w = tile * kThreads + threadIdx.x;
    const uint32_t a = w < words ? above_mask[w] : 0u;
    const uint32_t t = w < words ? tie_mask[w] : 0u;
    unsigned a_before = 0, t_before = 0;
    BlockScan(scan).ExclusiveSum(unsigned(__popc(a)), a_before);
    __syncthreads();
    BlockScan(scan).ExclusiveSum(unsigned(__popc(t)), t_before);
    uint64_t above = above_offsets[tile] + a_before;
    uint64_t ties = tie_offsets[tile] + t_before;
    uint32_t bits = a | t;
    while (bits != 0) {
      const int b = __ffs(int(bits)) - 1;
      const uint32_t bit = 1u << b;
      bits &= bits - 1;
      uint64_t place = capacity;  // not kept
      if (a & bit) {
        place = above + (ties < need ? ties : need);
        ++above;
      } else {
        if (ties < need) place = above + ties;
        ++ties;
      }
      if (place < capacity) emit(place, w * 32 + unsigned(b));
    }
    __syncthreads();  // the scan's storage is reused by the next tile
  }
}

// Carves temporary storage into 256-byte aligned pieces (base null: only counts the bytes).
struct Carver {
  char* base;
  size_t used = 0;
  template <typename T>
  T* take(size_t n) {
    T* at = reinterpret_cast<T*>(base == nullptr ? nullptr : base + used);
    used += ((n * sizeof(T) + 255) / 256) * 256;
    return at;
  }
};

inline unsigned blocksFor(size_t units, unsigned most) {
  return unsigned(units == 0 ? 1 : units < most ? units : most);
}

// The selection's pieces of temporary storage, carved from `carve` (in this order).
struct CutBuffers {
  CutState* state;
  unsigned long long* hist;
  uint32_t* above_mask;
  uint32_t* tie_mask;
  uint64_t* above_counts;
  uint64_t* tie_counts;
  uint64_t* above_offsets;
  uint64_t* tie_offsets;
  void* scan_temp;
  size_t scan_bytes;
};

inline cudaError_t carveCutBuffers(Carver& carve, size_t items, CutBuffers* b) {
  const size_t tiles = (items + kTile - 1) / kTile;
  const size_t words = (items + 31) / 32;
  b->state = carve.take<CutState>(1);
  b->hist = carve.take<unsigned long long>(kDigitBins);
  b->above_mask = carve.take<uint32_t>(words + 1);
  b->tie_mask = carve.take<uint32_t>(words + 1);
  b->above_counts = carve.take<uint64_t>(tiles + 1);
  b->tie_counts = carve.take<uint64_t>(tiles + 1);
  b->above_offsets = carve.take<uint64_t>(tiles + 1);
  b->tie_offsets = carve.take<uint64_t>(tiles + 1);
  b->scan_bytes = 0;
  const cudaError_t status = cub::DeviceScan::ExclusiveSum(
      nullptr, b->scan_bytes, b->above_counts, b->above_offsets,
      static_cast<int64_t>(tiles > 0 ? tiles : 1));
  b->scan_temp = carve.take<char>(b->scan_bytes);
  return status;
}

// Steps 1-3 on buffers from carveCutBuffers (carved from real memory). key_bits: how many low
// bits a key may have (31 for float32 magnitudes, 63 for float64). need_cut: find K even when
// every qualifying position is kept (then K is the smallest kept key). b.state holds the result.
template <typename Keys, typename Emit>
cudaError_t cappedSelect(const CutBuffers& b, Keys keys, size_t items, unsigned key_bits,
                         size_t capacity, bool need_cut, Emit emit, cudaStream_t stream) {
  const size_t tiles = (items + kTile - 1) / kTile;
  const unsigned grid = blocksFor((items + kThreads - 1) / kThreads, kHistogramBlocks);
  cudaError_t status = cudaSuccess;
  bool first = true;
  for (unsigned hi = key_bits; hi > 0;) {
    const unsigned lo = hi > kDigitBits ? hi - kDigitBits : 0;
    status = cudaMemsetAsync(b.hist, 0, kDigitBins * sizeof(unsigned long long), stream);
    if (status != cudaSuccess) return status;
    cutHistogram<<<grid, kThreads, 0, stream>>>(keys, items, b.state, lo, hi, first, b.hist);
    cutResolve<<<1, kThreads, 0, stream>>>(b.hist, lo, hi, first, capacity, need_cut, b.state);
    first = false;
    hi = lo;
  }
  cutMask<<<blocksFor(tiles, kMaxBlocks), kThreads, 0, stream>>>(
      keys, items, b.state, b.above_mask, b.tie_mask, b.above_counts, b.tie_counts);
  size_t scan_bytes = b.scan_bytes;
  status = cub::DeviceScan::ExclusiveSum(b.scan_temp, scan_bytes, b.above_counts, b.above_offsets,
                                         static_cast<int64_t>(tiles), stream);
  if (status == cudaSuccess) {
    scan_bytes = b.scan_bytes;
    status = cub::DeviceScan::ExclusiveSum(b.scan_temp, scan_bytes, b.tie_counts, b.tie_offsets,
                                           static_cast<int64_t>(tiles), stream);
  }
  if (status != cudaSuccess) return status;
  cutEmit<<<blocksFor(tiles, kMaxBlocks), kThreads, 0, stream>>>(
      b.above_mask, b.tie_mask, items, b.above_counts, b.tie_counts, b.above_offsets,
      b.tie_offsets, b.state, capacity, emit);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_kernels::capped
