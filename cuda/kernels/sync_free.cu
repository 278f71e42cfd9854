// The data-parallel steps of the device-resident sync_free call (src/algorithms/resident_sync_free.cc
// has the call, docs/algorithms/sync_free.md its bytes): every size is fixed by the capacity, every
// count stays in device memory, so the steps and the collectives between them can be captured in
// a CUDA graph. Nothing here waits for the host. The one-thread decisions between them are
// sync_free_call.cu's.
//
// Capped selection (bitwise the CPU's trimSelection: every entry above the cut-off, then the
// lowest indices among those equal to it): capped_selection.cuh over the range's magnitude
// patterns at or above the threshold's, each kept index written to its place in the slot, then
// the padding (-1) and the header. No sort and no host count. The first version compacted the
// qualifying entries, radix-sorted `items` keys (padding included) and sorted the kept ones again:
// 3.1 ms of a 3.2 ms call at 26M float32 on an H100. Temporary storage: about 1/16 of
// the range's float32 bytes (two masks) plus 32 bytes per tile of 8192 entries.
#include "cuda/dispatch.h"
#include "cuda/kernels/capped_selection.cuh"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/sync_free_call.h"
#include "kernels/shared/half.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr size_t kHeaderWords = kSlotHeaderWords;

__global__ void thresholdToBits(const double* threshold, scclDataType_t dtype, uint64_t* bits) {
  *bits = thresholdBits(dtype, *threshold);
}

using capped::CutState;

// Positions j of the selection are indices bounds[0] + j; those at or past bounds[1] never
// qualify (and are never read). `items` >= the range's size is fixed by the caller.
template <typename Bits>
struct RangeKeys {
  const Bits* x;
  const uint64_t* bounds;
  const uint64_t* threshold_bits;
  struct Resolved {
    const Bits* x;
    uint64_t begin, end, floor_bits;
    __device__ bool key(size_t j, uint64_t* k) const {
      const uint64_t i = begin + j;
      if (i >= end) return false;
      const uint64_t m = magnitudeBits(x[i]);
      if (m < floor_bits) return false;
      *k = m;
      return true;
    }
  };
  __device__ Resolved resolve() const { return {x, bounds[0], bounds[1], *threshold_bits}; }
};

struct SlotEmit {
  int64_t* out;  // the slot's indices
  const uint64_t* bounds;
  __device__ void operator()(uint64_t place, size_t j) const {
    out[place] = int64_t(bounds[0] + j);
  }
};

// The slot's padding (-1 past the kept count, up to the capacity) and header.
__global__ void cutFinish(const CutState* state, size_t keep, size_t capacity,
                          const uint64_t* nonfinite, SlotHeader header, int64_t* slot) {
  const size_t n = state->take_all ? size_t(state->total) : keep;
  for (size_t j = n + globalThread(); j < capacity; j += gridThreads()) slot[kHeaderWords + j] = -1;
  if (globalThread() == 0) {
    slot[0] = int64_t(n);
    slot[1] = nonfinite == nullptr ? 0 : int64_t(*nonfinite);
    slot[2] = int64_t(header.fingerprint);
    slot[3] = int64_t(*header.sequence);
  }
}

template <typename Bits>
cudaError_t selectTyped(void* temp, size_t* temp_bytes, const Bits* x, const uint64_t* bounds,
                        size_t items, const double* threshold, scclDataType_t dtype, size_t keep,
                        size_t capacity, const uint64_t* nonfinite, SlotHeader header,
                        int64_t* slot, cudaStream_t stream) {
  capped::Carver carve{static_cast<char*>(temp)};
  uint64_t* bits = carve.take<uint64_t>(1);
  capped::CutBuffers buffers;
  cudaError_t status = capped::carveCutBuffers(carve, items, &buffers);
  if (status != cudaSuccess) return status;
  if (temp == nullptr) {
    *temp_bytes = carve.used;
    return cudaSuccess;
  }
  thresholdToBits<<<1, 1, 0, stream>>>(threshold, dtype, bits);
  // The magnitude pattern has every bit but the sign.
  status = capped::cappedSelect(buffers, RangeKeys<Bits>{x, bounds, bits}, items,
                                unsigned(sizeof(Bits) * 8 - 1), keep, false,
                                SlotEmit{slot + kHeaderWords, bounds}, stream);
  if (status != cudaSuccess) return status;
  cutFinish<<<gridFor(capacity), kThreads, 0, stream>>>(buffers.state, keep, capacity, nonfinite,
                                                        header, slot);
  return cudaGetLastError();
}

// Index j of rank r's slot, or -1 when it is padding or fails its checks (then *bad is set):
// the claimed count within the capacity, the index inside the rank's range and above the slot's
// previous index (strictly ascending, as the host reduction requires: a repeated index would
// have two threads write one output entry). A set *bad fails the call (syncFreeSettle); the
// kernels never go out of bounds.
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
__global__ void gatherSlots(const T* acc, const int64_t* gathered, SyncFreeWords w, T* values) {
  const size_t total = size_t(w.nranks) * w.capacity;
  for (size_t s = globalThread(); s < total; s += gridThreads()) {
    const int64_t i =
        checkedIndex(gathered, w.ranges, int(s / w.capacity), w.capacity, s % w.capacity, w.bad);
    values[s] = i < 0 ? T(0) : acc[i];
  }
}

// recvbuf = 0 where the call completes (the selected entries are written next), else the NaN of
// the gradient type (the host's pattern, algorithms/call_header.h).
template <typename Word>
__global__ void fillOutput(Word* out, size_t count, Word nan, const uint32_t* status) {
  const Word value = *status == kSyncFreeCompletes ? Word(0) : nan;
  for (size_t i = globalThread(); i < count; i += gridThreads()) out[i] = value;
}

template <typename T>
__global__ void writeSlots(void* recv, scclDataType_t recv_dtype, T* acc, const int64_t* gathered,
                           SyncFreeWords w, const T* values, uint32_t divisor) {
  if (*w.status != kSyncFreeCompletes) return;  // a failed or discarded call writes nothing
  const size_t total = size_t(w.nranks) * w.capacity;
  for (size_t s = globalThread(); s < total; s += gridThreads()) {
    const int64_t i =
        checkedIndex(gathered, w.ranges, int(s / w.capacity), w.capacity, s % w.capacity, nullptr);
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

cudaError_t fillOutputFor(void* recv, scclDataType_t dtype, size_t count, const uint32_t* status,
                          cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  // The host's patterns (fillWithNaN): float32 and float64 quiet NaN, converted by
  // kernels/shared/half.h.
  const float nan = bitsToFloat(0x7fc00000u);
  switch (dtype) {
    case scclFloat64:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint64_t*>(recv), count,
                                                          uint64_t(0x7ff8000000000000ull), status);
      break;
    case scclFloat16:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint16_t*>(recv), count,
                                                          floatToFp16(nan), status);
      break;
    case scclBfloat16:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint16_t*>(recv), count,
                                                          floatToBf16(nan), status);
      break;
    default:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint32_t*>(recv), count,
                                                          uint32_t(0x7fc00000u), status);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t syncFreeSelect(void* temp, size_t* temp_bytes, const void* acc, scclDataType_t dtype,
                           const uint64_t* bounds, size_t items, const double* threshold,
                           size_t keep, size_t capacity, const uint64_t* nonfinite,
                           SlotHeader header, int64_t* slot, cudaStream_t stream) {
  if (dtype == scclFloat64) {
    return selectTyped(temp, temp_bytes, static_cast<const uint64_t*>(acc), bounds, items,
                       threshold, dtype, keep, capacity, nonfinite, header, slot, stream);
  }
  return selectTyped(temp, temp_bytes, static_cast<const uint32_t*>(acc), bounds, items, threshold,
                     dtype, keep, capacity, nonfinite, header, slot, stream);
}

cudaError_t syncFreeGatherSlots(const void* acc, scclDataType_t dtype, const int64_t* gathered,
                                const SyncFreeWords& w, void* values, cudaStream_t stream) {
  const size_t total = size_t(w.nranks) * w.capacity;
  if (dtype == scclFloat64) {
    gatherSlots<<<gridFor(total), kThreads, 0, stream>>>(static_cast<const double*>(acc), gathered,
                                                         w, static_cast<double*>(values));
  } else {
    gatherSlots<<<gridFor(total), kThreads, 0, stream>>>(static_cast<const float*>(acc), gathered,
                                                         w, static_cast<float*>(values));
  }
  const cudaError_t status = cudaGetLastError();
  return status != cudaSuccess ? status : syncFreeSettle(w, stream);
}

cudaError_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                          scclDataType_t dtype, const int64_t* gathered, const SyncFreeWords& w,
                          const void* values, uint32_t divisor, cudaStream_t stream) {
  cudaError_t status = fillOutputFor(recv, recv_dtype, count, w.status, stream);
  if (status != cudaSuccess) return status;
  const size_t total = size_t(w.nranks) * w.capacity;
  if (dtype == scclFloat64) {
    writeSlots<<<gridFor(total), kThreads, 0, stream>>>(recv, recv_dtype, static_cast<double*>(acc),
                                                        gathered, w,
                                                        static_cast<const double*>(values), divisor);
  } else {
    writeSlots<<<gridFor(total), kThreads, 0, stream>>>(recv, recv_dtype, static_cast<float*>(acc),
                                                        gathered, w,
                                                        static_cast<const float*>(values), divisor);
  }
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
