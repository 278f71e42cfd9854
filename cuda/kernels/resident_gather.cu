// The device-resident gather call's own kernels (src/algorithms/resident_gather.cc has the
// steps): the plan (kernels/shared/gather_plan.h, the function the CPU backend runs, on one
// thread: O(n (bins + 1)) integer additions, about 2,000 at 4 ranks), the padding of the local
// slice, the check and concatenation of every rank's slice, and the two steps that a failed check
// turns off (the output's zeroing) or on (the residual put back). Nothing here waits for the
// host, and a fault word decides on the device what the host cannot know without a wait.
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/gather_plan.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

__global__ void padKernel(int64_t* idx, size_t from, size_t to) {
  for (size_t j = from + globalThread(); j < to; j += gridThreads()) idx[j] = -1;
}

__global__ void planKernel(const uint64_t* records, GatherPlanParams params, const uint64_t* ranges,
                           const uint32_t* fault, uint64_t* plan) {
  planGatherCall(records, params, ranges, *fault, plan);
}

__global__ void assembleKernel(const int64_t* gathered, size_t nranks, size_t slot,
                               const uint64_t* plan, const uint64_t* ranges, int64_t* global,
                               uint32_t* fault) {
  const size_t positions = nranks * slot;
  for (size_t p = globalThread(); p < positions; p += gridThreads()) {
    const size_t r = p / slot;
    const size_t j = p % slot;
    if (j >= plan[kGatherPlanHeaderWords + 2 * r]) continue;
    const int64_t* slice = gathered + r * slot;
    const bool valid = sliceEntryValid(slice, j, ranges[2 * r], ranges[2 * r + 1]);
    global[plan[kGatherPlanHeaderWords + 2 * r + 1] + j] = valid ? slice[j] : 0;
    if (!valid) atomicMin(fault, uint32_t(r));
  }
}

template <typename Word>
__global__ void zeroUnlessFaultKernel(Word* dst, size_t words, const uint32_t* fault) {
  if (*fault != kNoIndexFault) return;
  for (size_t i = globalThread(); i < words; i += gridThreads()) dst[i] = Word{0};
}

__global__ void copyOnFaultKernel(uint32_t* dst, const uint32_t* src, size_t words,
                                  const uint32_t* fault, uint32_t* published) {
  const uint32_t f = *fault;
  if (f == kNoIndexFault) return;
  for (size_t i = globalThread(); i < words; i += gridThreads()) dst[i] = src[i];
  if (published != nullptr && globalThread() == 0) {
    *published = f;
    __threadfence_system();  // the host reads it without waiting for the stream
  }
}

}  // namespace

cudaError_t padIndices(int64_t* idx, size_t from, size_t to, cudaStream_t stream) {
  if (from >= to) return cudaSuccess;
  padKernel<<<gridFor(to - from), kThreads, 0, stream>>>(idx, from, to);
  return cudaGetLastError();
}

cudaError_t planGather(const uint64_t* records, const GatherPlanParams& params,
                       const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                       cudaStream_t stream) {
  planKernel<<<1, 1, 0, stream>>>(records, params, ranges, fault, plan);
  return cudaGetLastError();
}

cudaError_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                     const uint64_t* plan, const uint64_t* ranges, int64_t* global,
                                     uint32_t* fault, cudaStream_t stream) {
  if (nranks * slot == 0) return cudaSuccess;
  assembleKernel<<<gridFor(nranks * slot), kThreads, 0, stream>>>(gathered, nranks, slot, plan,
                                                                  ranges, global, fault);
  return cudaGetLastError();
}

cudaError_t zeroUnlessFault(void* dst, size_t bytes, const uint32_t* fault, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (bytes % 4 == 0) {
    zeroUnlessFaultKernel<<<gridFor(bytes / 4), kThreads, 0, stream>>>(static_cast<uint32_t*>(dst),
                                                                       bytes / 4, fault);
  } else {
    zeroUnlessFaultKernel<<<gridFor(bytes / 2), kThreads, 0, stream>>>(static_cast<uint16_t*>(dst),
                                                                       bytes / 2, fault);
  }
  return cudaGetLastError();
}

cudaError_t copyOnFault(void* dst, const void* src, size_t bytes, const uint32_t* fault,
                        uint32_t* published, cudaStream_t stream) {
  if (bytes == 0 && published == nullptr) return cudaSuccess;
  copyOnFaultKernel<<<gridFor(bytes / 4), kThreads, 0, stream>>>(
      static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), bytes / 4, fault, published);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
