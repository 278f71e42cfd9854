// The device steps of the sync_free reduction (src/algorithms/sync_free_reduction.cc has the
// algorithm, docs/algorithms/sync_free.md its bytes): every size is fixed by the capacity, every
// count stays in device memory, so the steps and the collectives between them can be captured in
// a CUDA graph. Nothing here waits for the host.
//
// Capped selection (bitwise the CPU's trimSelection: every entry above the cut-off, then the
// lowest indices among those equal to it), without sorting and without a host count. S is the set
// of range entries with magnitude_bits >= the threshold's pattern; when |S| <= capacity all of S
// is taken, else the cut-off K is the capacity-th largest magnitude pattern in S:
//  1. radix select of K over S, 11 bits per pass from the top (3 passes for float32, 6 for
//     float64): each pass counts the next digit of the entries that match the digits found so far
//     (shared-memory histogram of 2048 bins, then one block picks the digit that holds the
//     capacity-th entry); the first pass also counts |S|, and when it fits the later passes
//     return at once;
//  2. one masking pass over the range, two bits per entry from warp ballots: "above" (in S and
//     above K, or every entry of S when it fits) and "tie" (equal to K);
//  3. scans of both masks' tile counts, then each entry's place in the slot is (entries above
//     before it) + min(ties before it, ties still needed): one write per kept index, ascending.
// Every size is fixed by `items` and the capacity, so a CUDA graph can hold it. The first version
// compacted S, then radix-sorted `items` keys (padding included) and sorted the kept ones again:
// 3.1 ms of a 3.2 ms call at 26M float32 on an H100 (issue 22). Temporary storage: about 1/16 of
// the range's float32 bytes (two masks) plus 16 bytes per tile of 8192 entries.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/sync_free_slot_check.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr size_t kHeaderWords = kSlotHeaderWords;

__global__ void thresholdToBits(const double* threshold, scclDataType_t dtype, uint64_t* bits) {
  *bits = thresholdBits(dtype, *threshold);
}

// Positions j of the selection are indices bounds[0] + j; those at or past bounds[1] never
// qualify (and are never read). `items` >= the range's size is fixed by the caller.
constexpr unsigned kDigitBits = 11;
constexpr unsigned kDigitBins = 1u << kDigitBits;
constexpr unsigned kCutThreads = 256;
constexpr size_t kTile = size_t(kCutThreads) * 32;  // entries per tile: one mask word per thread
constexpr unsigned kMaxBlocks = 2048;

// What the radix select has found so far (device memory, rewritten by every call).
struct CutState {
  unsigned long long total;      // |S|
  unsigned long long remaining;  // entries still to take among those matching `prefix`
  unsigned long long prefix;     // K's digits found so far
  unsigned int take_all;         // |S| <= capacity: all of S, no cut-off
};

// The digit [lo, hi) of the magnitude patterns in S that match K's digits above hi, counted.
template <typename Bits>
__global__ void __launch_bounds__(kCutThreads)
    cutHistogram(const Bits* x, const uint64_t* bounds, size_t items, const uint64_t* tbits,
                 const CutState* state, unsigned lo, unsigned hi, bool first,
                 unsigned long long* hist) {
  if (!first && state->take_all) return;
  __shared__ unsigned counts[kDigitBins];
  const unsigned bins = 1u << (hi - lo);
  for (unsigned j = threadIdx.x; j < bins; j += blockDim.x) counts[j] = 0;
  __syncthreads();
  const uint64_t begin = bounds[0], end = bounds[1], floor_bits = *tbits;
  const uint64_t prefix_high = first ? 0 : (state->prefix >> hi);
  for (size_t j = globalThread(); j < items; j += gridThreads()) {
    const uint64_t i = begin + j;
    if (i >= end) break;  // j only grows
    const uint64_t m = magnitudeBits(x[i]);
    if (m < floor_bits || (m >> hi) != prefix_high) continue;
    atomicAdd(&counts[(m >> lo) & (bins - 1)], 1u);
  }
  __syncthreads();
  for (unsigned j = threadIdx.x; j < bins; j += blockDim.x) {
    if (counts[j] != 0) atomicAdd(hist + j, static_cast<unsigned long long>(counts[j]));
  }
}

// One block: the digit whose bin holds the remaining-th largest entry, from the top bin down.
// Thread t sums the bins of its chunk (chunk 0 = the highest bins); a block scan gives the
// entries above each chunk, and the one thread whose chunk holds the entry walks it.
__global__ void __launch_bounds__(kCutThreads)
    cutResolve(const unsigned long long* hist, unsigned lo, unsigned hi, bool first,
               size_t capacity, CutState* state) {
  using BlockScan = cub::BlockScan<unsigned long long, kCutThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  if (!first && state->take_all) return;
  const unsigned bins = 1u << (hi - lo);
  const unsigned per = (bins + kCutThreads - 1) / kCutThreads;
  const unsigned long long wanted = first ? capacity : state->remaining;
  unsigned long long mine = 0;
  for (unsigned u = 0; u < per; ++u) {
    const unsigned d = threadIdx.x * per + u;
    if (d < bins) mine += hist[bins - 1 - d];
  }
  unsigned long long above = 0, total = 0;
  BlockScan(scan).ExclusiveSum(mine, above, total);
  if (first) {
    if (threadIdx.x == 0) {
      state->total = total;
      state->take_all = total <= capacity ? 1u : 0u;
    }
    if (total <= capacity) return;
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

// Two bits per position: above (kept whatever the order) and tie (== K, kept by index order);
// each tile's counts of both.
template <typename Bits>
__global__ void __launch_bounds__(kCutThreads)
    cutMask(const Bits* x, const uint64_t* bounds, size_t items, const uint64_t* tbits,
            const CutState* state, uint32_t* above_mask, uint32_t* tie_mask,
            uint64_t* above_counts, uint64_t* tie_counts) {
  __shared__ unsigned warp_counts[2][kCutThreads / 32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint64_t begin = bounds[0], end = bounds[1], floor_bits = *tbits;
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
      const bool inside = p < items && begin + p < end;
      const uint64_t m = inside ? uint64_t(magnitudeBits(x[begin + p])) : 0;
      const bool in_s = inside && m >= floor_bits;
      const uint32_t a = __ballot_sync(0xffffffffu, in_s && (take_all || m > cut));
      const uint32_t t = __ballot_sync(0xffffffffu, in_s && !take_all && m == cut);
      if (lane == j) {
        my_above = a;
        my_tie = t;
      }
    }
    const size_t w = tile * kCutThreads + threadIdx.x;
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
      for (unsigned v = 0; v < kCutThreads / 32; ++v) {
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
__global__ void __launch_bounds__(kCutThreads)
    cutEmit(const uint32_t* above_mask, const uint32_t* tie_mask, size_t items,
            const uint64_t* above_counts, const uint64_t* tie_counts,
            const uint64_t* above_offsets, const uint64_t* tie_offsets, const CutState* state,
            const uint64_t* bounds, size_t capacity, int64_t* out) {
  using BlockScan = cub::BlockScan<unsigned, kCutThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  const uint64_t need = state->take_all ? 0 : state->remaining;
  const int64_t begin = int64_t(bounds[0]);
  const size_t tiles = (items + kTile - 1) / kTile;
  const size_t words = (items + 31) / 32;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    if (above_counts[tile] == 0 && tie_counts[tile] == 0) continue;  // block-uniform
    const size_t w = tile * kCutThreads + threadIdx.x;
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
      if (place < capacity) out[place] = begin + int64_t(w * 32 + unsigned(b));
    }
    __syncthreads();  // the scan's storage is reused by the next tile
  }
}

// The slot's padding (-1 past the kept count) and header.
__global__ void cutFinish(const CutState* state, size_t capacity, const uint64_t* nonfinite,
                          SlotHeader header, int64_t* slot) {
  const size_t n = state->take_all ? size_t(state->total) : capacity;
  for (size_t j = n + globalThread(); j < capacity; j += gridThreads()) slot[kHeaderWords + j] = -1;
  if (globalThread() == 0) {
    slot[0] = int64_t(n);
    slot[1] = nonfinite == nullptr ? 0 : int64_t(*nonfinite);
    slot[2] = int64_t(header.fingerprint);
    slot[3] = int64_t(*header.sequence);
  }
}

// Carves the temporary storage into 256-byte aligned pieces.
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

unsigned blocksFor(size_t units) {
  return unsigned(units == 0 ? 1 : units < kMaxBlocks ? units : kMaxBlocks);
}

template <typename Bits>
cudaError_t selectTyped(void* temp, size_t* temp_bytes, const Bits* x, const uint64_t* bounds,
                        size_t items, const double* threshold, scclDataType_t dtype,
                        size_t capacity, const uint64_t* nonfinite, SlotHeader header,
                        int64_t* slot, cudaStream_t stream) {
  const size_t tiles = (items + kTile - 1) / kTile;
  const size_t words = (items + 31) / 32;
  Carver carve{static_cast<char*>(temp)};
  uint64_t* bits = carve.take<uint64_t>(1);
  CutState* state = carve.take<CutState>(1);
  unsigned long long* hist = carve.take<unsigned long long>(kDigitBins);
  uint32_t* above_mask = carve.take<uint32_t>(words + 1);
  uint32_t* tie_mask = carve.take<uint32_t>(words + 1);
  uint64_t* above_counts = carve.take<uint64_t>(tiles + 1);
  uint64_t* tie_counts = carve.take<uint64_t>(tiles + 1);
  uint64_t* above_offsets = carve.take<uint64_t>(tiles + 1);
  uint64_t* tie_offsets = carve.take<uint64_t>(tiles + 1);
  size_t scan_bytes = 0;
  cudaError_t status = cub::DeviceScan::ExclusiveSum(
      nullptr, scan_bytes, above_counts, above_offsets, static_cast<int64_t>(tiles > 0 ? tiles : 1),
      stream);
  if (status != cudaSuccess) return status;
  void* scan_temp = carve.take<char>(scan_bytes);
  if (temp == nullptr) {
    *temp_bytes = carve.used;
    return cudaSuccess;
  }
  thresholdToBits<<<1, 1, 0, stream>>>(threshold, dtype, bits);
  // Step 1: K's digits from the top; the magnitude pattern has all bits but the sign.
  const unsigned key_bits = unsigned(sizeof(Bits) * 8 - 1);
  const unsigned grid = blocksFor((items + kCutThreads - 1) / kCutThreads) < 1024
                            ? blocksFor((items + kCutThreads - 1) / kCutThreads)
                            : 1024;
  bool first = true;
  for (unsigned hi = key_bits; hi > 0;) {
    const unsigned lo = hi > kDigitBits ? hi - kDigitBits : 0;
    status = cudaMemsetAsync(hist, 0, kDigitBins * sizeof(unsigned long long), stream);
    if (status != cudaSuccess) return status;
    cutHistogram<<<grid, kCutThreads, 0, stream>>>(x, bounds, items, bits, state, lo, hi, first,
                                                   hist);
    cutResolve<<<1, kCutThreads, 0, stream>>>(hist, lo, hi, first, capacity, state);
    first = false;
    hi = lo;
  }
  // Steps 2 and 3.
  cutMask<<<blocksFor(tiles), kCutThreads, 0, stream>>>(x, bounds, items, bits, state, above_mask,
                                                        tie_mask, above_counts, tie_counts);
  status = cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, above_counts, above_offsets,
                                         static_cast<int64_t>(tiles), stream);
  if (status == cudaSuccess)
    status = cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, tie_counts, tie_offsets,
                                           static_cast<int64_t>(tiles), stream);
  if (status != cudaSuccess) return status;
  cutEmit<<<blocksFor(tiles), kCutThreads, 0, stream>>>(above_mask, tie_mask, items, above_counts,
                                                        tie_counts, above_offsets, tie_offsets,
                                                        state, bounds, capacity, slot + kHeaderWords);
  cutFinish<<<gridFor(capacity), kThreads, 0, stream>>>(state, capacity, nonfinite, header, slot);
  return cudaGetLastError();
}

// Index j of rank r's slot, or -1 when it is padding or fails its checks (then *bad is set):
// the claimed count within the capacity, the index inside the rank's range and above the slot's
// previous index (strictly ascending, as the host reduction requires: a repeated index would
// have two threads write one output entry). The host reads *bad after the call completes and
// reports scclRemoteError; the kernels never go out of bounds.
__device__ inline int64_t checkedIndex(const int64_t* gathered, const uint64_t* ranges, int r,
                                       size_t capacity, size_t j, uint32_t* bad) {
  const int64_t* slot = gathered + size_t(r) * (kHeaderWords + capacity);
  const uint64_t k = uint64_t(slot[0]);
  if (k > capacity) {
    if (bad != nullptr) atomicOr(bad, 1u);
    return -1;
  }
  if (j >= k) return -1;
  const int64_t i = slot[kHeaderWords + j];
  if (i < int64_t(ranges[2 * r]) || i >= int64_t(ranges[2 * r + 1]) ||
      (j > 0 && i <= slot[kHeaderWords + j - 1])) {
    if (bad != nullptr) atomicOr(bad, 1u);
    return -1;
  }
  return i;
}

template <typename T>
__global__ void gatherSlots(const T* acc, const int64_t* gathered, const uint64_t* ranges,
                            int nranks, size_t capacity, T* values, uint32_t* bad) {
  const size_t total = size_t(nranks) * capacity;
  for (size_t s = globalThread(); s < total; s += gridThreads()) {
    const int64_t i =
        checkedIndex(gathered, ranges, int(s / capacity), capacity, s % capacity, bad);
    values[s] = i < 0 ? T(0) : acc[i];
  }
}

template <typename T>
__global__ void writeSlots(void* recv, scclDataType_t recv_dtype, T* acc, const int64_t* gathered,
                           const uint64_t* ranges, int nranks, size_t capacity, const T* values,
                           uint32_t divisor, const uint32_t* status) {
  if (status != nullptr && *status != 0) return;  // a failed or discarded call writes nothing
  const size_t total = size_t(nranks) * capacity;
  for (size_t s = globalThread(); s < total; s += gridThreads()) {
    const int64_t i =
        checkedIndex(gathered, ranges, int(s / capacity), capacity, s % capacity, nullptr);
    if (i < 0) continue;
    T v = values[s];
    if (divisor != 1) v = canonicalizeNaN(v / T(divisor));  // scclAvg: as the CPU's divideByRanks
    if constexpr (sizeof(T) == 8) {
      static_cast<double*>(recv)[i] = v;
    } else {
      storeFloat(recv, recv_dtype, size_t(i), v);
    }
    acc[i] = T(0);
  }
}

__global__ void updateThreshold(const int64_t* gathered, int nranks, size_t capacity,
                                uint64_t k_target, ScalingRule rule, const uint32_t* status,
                                double* threshold) {
  if (status != nullptr && *status != 0) return;  // as the host: a discarded call is not observed
  uint64_t k_global = 0;
  for (int r = 0; r < nranks; ++r) {
    const uint64_t k = uint64_t(gathered[size_t(r) * (kHeaderWords + capacity)]);
    k_global += k < capacity ? k : capacity;
  }
  *threshold = scaledThreshold(rule, *threshold, k_global, k_target);
}

}  // namespace

cudaError_t syncFreeSelect(void* temp, size_t* temp_bytes, const void* acc, scclDataType_t dtype,
                           const uint64_t* bounds, size_t items, const double* threshold,
                           size_t capacity, const uint64_t* nonfinite, SlotHeader header,
                           int64_t* slot, cudaStream_t stream) {
  if (dtype == scclFloat64) {
    return selectTyped(temp, temp_bytes, static_cast<const uint64_t*>(acc), bounds, items,
                       threshold, dtype, capacity, nonfinite, header, slot, stream);
  }
  return selectTyped(temp, temp_bytes, static_cast<const uint32_t*>(acc), bounds, items, threshold,
                     dtype, capacity, nonfinite, header, slot, stream);
}

cudaError_t syncFreeGatherSlots(const void* acc, scclDataType_t dtype, size_t count,
                                const int64_t* gathered, const uint64_t* ranges, int nranks,
                                size_t capacity, void* values, uint32_t* bad, cudaStream_t stream) {
  (void)count;  // every index is checked against its rank's range, which lies inside count
  const size_t total = size_t(nranks) * capacity;
  if (dtype == scclFloat64) {
    gatherSlots<<<gridFor(total), kThreads, 0, stream>>>(static_cast<const double*>(acc), gathered,
                                                         ranges, nranks, capacity,
                                                         static_cast<double*>(values), bad);
  } else {
    gatherSlots<<<gridFor(total), kThreads, 0, stream>>>(static_cast<const float*>(acc), gathered,
                                                         ranges, nranks, capacity,
                                                         static_cast<float*>(values), bad);
  }
  return cudaGetLastError();
}

cudaError_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, void* acc, scclDataType_t dtype,
                          size_t count, const int64_t* gathered, const uint64_t* ranges, int nranks,
                          size_t capacity, const void* values, uint32_t divisor,
                          const uint32_t* status, cudaStream_t stream) {
  (void)count;
  const size_t total = size_t(nranks) * capacity;
  if (dtype == scclFloat64) {
    writeSlots<<<gridFor(total), kThreads, 0, stream>>>(
        recv, recv_dtype, static_cast<double*>(acc), gathered, ranges, nranks, capacity,
        static_cast<const double*>(values), divisor, status);
  } else {
    writeSlots<<<gridFor(total), kThreads, 0, stream>>>(
        recv, recv_dtype, static_cast<float*>(acc), gathered, ranges, nranks, capacity,
        static_cast<const float*>(values), divisor, status);
  }
  return cudaGetLastError();
}

cudaError_t syncFreeUpdateThreshold(const int64_t* gathered, int nranks, size_t capacity,
                                    uint64_t k_target, ScalingRule rule, const uint32_t* status,
                                    double* threshold, cudaStream_t stream) {
  updateThreshold<<<1, 1, 0, stream>>>(gathered, nranks, capacity, k_target, rule, status,
                                       threshold);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
