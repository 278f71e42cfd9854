// The device steps of the sync_free reduction (src/algorithms/sync_free_reduction.cc has the
// algorithm, docs/algorithms/sync_free.md its bytes): every size is fixed by the capacity, every
// count stays in device memory, so the steps and the collectives between them can be captured in
// a CUDA graph. Nothing here waits for the host.
//
// Capped selection (bitwise the CPU's trimSelection: all entries above the cut-off, then the
// lowest indices among those equal to it): compact the qualifying indices of the range
// (DeviceSelect; threshold and range bounds read from device memory), key each by its magnitude
// pattern + 1 (0 for the unused tail, so the sort needs no host count), stable radix sort
// descending (equal keys keep ascending indices), take the first `capacity`, sort those ascending
// for the slot. Temporary storage: about 32 bytes per element of the range plus 16 per capacity
// entry.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/sync_free_slot_check.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr size_t kHeaderWords = kSlotHeaderWords;

// The range [bounds[0], bounds[1]) is read on the device (the stream-ordered call computes it
// there each call), so the selection runs over a fixed number of positions, `items` >= the
// range's size: position j is index bounds[0] + j, and indices at or past bounds[1] never qualify
// (and are never read).
struct OffsetByBegin {
  const uint64_t* bounds;
  __device__ int64_t operator()(int64_t j) const { return int64_t(bounds[0]) + j; }
};

template <typename Bits>
struct AtOrAboveInRange {
  const Bits* x;
  const uint64_t* threshold_bits;
  const uint64_t* bounds;
  __device__ bool operator()(int64_t i) const {
    return uint64_t(i) < bounds[1] && magnitudeBits(x[i]) >= *threshold_bits;
  }
};

__global__ void thresholdToBits(const double* threshold, scclDataType_t dtype, uint64_t* bits) {
  *bits = thresholdBits(dtype, *threshold);
}

template <typename Bits>
__global__ void rankKeys(const Bits* x, const int64_t* found, const uint64_t* nfound, size_t n,
                         uint64_t* keys) {
  for (size_t j = globalThread(); j < n; j += gridThreads())
    keys[j] = j < *nfound ? uint64_t(magnitudeBits(x[found[j]])) + 1 : 0;
}

__global__ void keepLargest(const int64_t* ranked, const uint64_t* nfound, size_t capacity,
                            int64_t* kept) {
  const size_t n = *nfound < capacity ? size_t(*nfound) : capacity;
  for (size_t j = globalThread(); j < capacity; j += gridThreads())
    kept[j] = j < n ? ranked[j] : INT64_MAX;  // padding sorts last
}

__global__ void writeSlot(const int64_t* sorted, const uint64_t* nfound, size_t capacity,
                          const uint64_t* nonfinite, SlotHeader header, int64_t* slot) {
  const size_t n = *nfound < capacity ? size_t(*nfound) : capacity;
  for (size_t j = globalThread(); j < capacity; j += gridThreads())
    slot[kHeaderWords + j] = j < n ? sorted[j] : -1;
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

template <typename Bits>
cudaError_t selectTyped(void* temp, size_t* temp_bytes, const Bits* x, const uint64_t* bounds,
                        size_t items, const double* threshold, scclDataType_t dtype,
                        size_t capacity, const uint64_t* nonfinite, SlotHeader header,
                        int64_t* slot, cudaStream_t stream) {
  const size_t range = items;
  Carver carve{static_cast<char*>(temp)};
  uint64_t* bits = carve.take<uint64_t>(1);
  uint64_t* nfound = carve.take<uint64_t>(1);
  int64_t* found = carve.take<int64_t>(range);
  uint64_t* keys = carve.take<uint64_t>(range);
  uint64_t* sorted_keys = carve.take<uint64_t>(range);
  int64_t* ranked = carve.take<int64_t>(range);
  int64_t* kept = carve.take<int64_t>(capacity);
  int64_t* kept_sorted = carve.take<int64_t>(capacity);
  size_t select_bytes = 0, rank_bytes = 0, order_bytes = 0;
  const thrust::transform_iterator<OffsetByBegin, thrust::counting_iterator<int64_t>, int64_t>
      first(thrust::counting_iterator<int64_t>(0), OffsetByBegin{bounds});
  AtOrAboveInRange<Bits> above{x, bits, bounds};
  cudaError_t status = cub::DeviceSelect::If(nullptr, select_bytes, first, found, nfound,
                                             static_cast<int64_t>(range), above, stream);
  if (status == cudaSuccess)
    status = cub::DeviceRadixSort::SortPairsDescending(nullptr, rank_bytes, keys, sorted_keys,
                                                       found, ranked, static_cast<int64_t>(range),
                                                       0, 64, stream);
  if (status == cudaSuccess)
    status = cub::DeviceRadixSort::SortKeys(nullptr, order_bytes, kept, kept_sorted,
                                            static_cast<int64_t>(capacity), 0, 64, stream);
  if (status != cudaSuccess) return status;
  size_t cub_bytes = select_bytes > rank_bytes ? select_bytes : rank_bytes;
  if (order_bytes > cub_bytes) cub_bytes = order_bytes;
  void* cub_temp = carve.take<char>(cub_bytes);
  if (temp == nullptr) {
    *temp_bytes = carve.used;
    return cudaSuccess;
  }
  thresholdToBits<<<1, 1, 0, stream>>>(threshold, dtype, bits);
  status = cub::DeviceSelect::If(cub_temp, select_bytes, first, found, nfound,
                                 static_cast<int64_t>(range), above, stream);
  if (status != cudaSuccess) return status;
  rankKeys<<<gridFor(range), kThreads, 0, stream>>>(x, found, nfound, range, keys);
  status =
      cub::DeviceRadixSort::SortPairsDescending(cub_temp, rank_bytes, keys, sorted_keys, found,
                                                ranked, static_cast<int64_t>(range), 0, 64, stream);
  if (status != cudaSuccess) return status;
  keepLargest<<<gridFor(capacity), kThreads, 0, stream>>>(ranked, nfound, capacity, kept);
  status = cub::DeviceRadixSort::SortKeys(cub_temp, order_bytes, kept, kept_sorted,
                                          static_cast<int64_t>(capacity), 0, 64, stream);
  if (status != cudaSuccess) return status;
  writeSlot<<<gridFor(capacity), kThreads, 0, stream>>>(kept_sorted, nfound, capacity, nonfinite,
                                                        header, slot);
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
