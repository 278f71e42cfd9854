// The plan of the device-resident union call (kernels/shared/union_plan.h;
// src/algorithms/resident_union.cc): the slot headers checked by the shared function in one
// thread, then every slot entry checked (sliceEntryValid) into a key (the index, or the largest
// key for padding and for a failed entry, whose rank lowers the fault word), a radix sort of the
// n * capacity keys (CUB), the removal of repeats (CUB) and, in one thread, the union's length
// without the largest key. The CPU backend merges the checked slices instead: the same sorted
// list. Work: the slots only (n * capacity entries), never the vector. Temporary storage: two key
// arrays, two words and CUB's larger scratch.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <climits>

#include "cuda/dispatch.h"
#include "cuda/kernels/capped_selection.cuh"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/union_plan.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr uint64_t kNoKey = ~uint64_t{0};  // sorts after every index

__global__ void unionHeaders(const uint64_t* slots, GatherPlanParams p, size_t capacity,
                             const uint64_t* ranges, uint64_t* plan, uint32_t* bad) {
  planUnionHeaders(slots, p, capacity, ranges, plan);
  *bad = kNoIndexFault;
}

__global__ void unionKeys(const uint64_t* slots, uint64_t nranks, size_t capacity,
                          const uint64_t* ranges, const uint64_t* plan, uint64_t* keys,
                          uint32_t* bad) {
  const size_t total = size_t(nranks) * capacity;
  const bool ok = plan[kPlanStatus] == kPlanOk;
  for (size_t s = globalThread(); s < total; s += gridThreads()) {
    const size_t r = s / capacity, j = s % capacity;
    const uint64_t* slot = slots + r * unionSlotWords(capacity);
    uint64_t key = kNoKey;
    if (ok && j < slot[kUnionSlotCount]) {  // counts are within the capacity once ok
      const int64_t* slice = reinterpret_cast<const int64_t*>(slot + kUnionSlotHeaderWords);
      if (sliceEntryValid(slice, j, ranges[2 * r], ranges[2 * r + 1])) {
        key = uint64_t(slice[j]);
      } else {
        atomicMin(bad, uint32_t(r));
      }
    }
    keys[s] = key;
  }
}

__global__ void unionFinish(const uint64_t* unique, const int* length, const uint32_t* bad,
                            uint64_t* plan) {
  uint64_t n = uint64_t(*length);
  if (n > 0 && unique[n - 1] == kNoKey) --n;
  finishUnionPlan(n, *bad, plan);
}

}  // namespace

cudaError_t planUnion(void* temp, size_t* temp_bytes, const uint64_t* slots,
                      const GatherPlanParams& p, size_t capacity, const uint64_t* ranges,
                      int64_t* global, uint64_t* plan, cudaStream_t stream) {
  const size_t total = size_t(p.nranks) * capacity;
  if (total > size_t(INT_MAX)) return cudaErrorInvalidValue;
  const int items = int(total);
  capped::Carver carve{static_cast<char*>(temp)};
  uint64_t* keys = carve.take<uint64_t>(total);
  uint64_t* sorted = carve.take<uint64_t>(total);
  uint32_t* bad = carve.take<uint32_t>(1);
  int* length = carve.take<int>(1);
  uint64_t* unique = reinterpret_cast<uint64_t*>(global);
  size_t sort_bytes = 0, unique_bytes = 0;
  cudaError_t status =
      cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, keys, sorted, items, 0, 64, stream);
  if (status != cudaSuccess) return status;
  status = cub::DeviceSelect::Unique(nullptr, unique_bytes, sorted, unique, length, items, stream);
  if (status != cudaSuccess) return status;
  size_t scratch_bytes = sort_bytes > unique_bytes ? sort_bytes : unique_bytes;
  void* scratch = carve.take<char>(scratch_bytes);
  if (temp == nullptr) {
    *temp_bytes = carve.used;
    return cudaSuccess;
  }
  unionHeaders<<<1, 1, 0, stream>>>(slots, p, capacity, ranges, plan, bad);
  unionKeys<<<gridFor(total), kThreads, 0, stream>>>(slots, p.nranks, capacity, ranges, plan, keys,
                                                     bad);
  status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  status = cub::DeviceRadixSort::SortKeys(scratch, sort_bytes, keys, sorted, items, 0, 64, stream);
  if (status != cudaSuccess) return status;
  scratch_bytes = unique_bytes;
  status = cub::DeviceSelect::Unique(scratch, scratch_bytes, sorted, unique, length, items, stream);
  if (status != cudaSuccess) return status;
  unionFinish<<<1, 1, 0, stream>>>(unique, length, bad, plan);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
