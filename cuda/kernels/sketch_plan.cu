// The device-resident S2 call's kernels on the GPU (KernelBackend::markedElements and
// planSketch): grid passes over a bitmap (the marked elements with integer atomic adds, which
// give the CPU's sums in any order; the lowest bad block by an atomic minimum), the plan's
// decisions (kernels/shared/sketch_plan.h, the CPU's) in one thread.
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/sketch_plan.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

// *elements += the elements of the marked blocks; *bad_block = min(*bad_block, the lowest block
// whose byte is not 0 or 1) when bad_block is not null.
__global__ void countMarked(const uint8_t* bitmap, size_t count, size_t block, size_t blocks,
                            uint64_t* elements, uint64_t* bad_block) {
  unsigned long long sum = 0, bad = ~0ull;
  for (size_t b = globalThread(); b < blocks; b += gridThreads()) {
    const uint8_t v = bitmap[b];
    if (v != 0) sum += sketchBlockElements(b, count, block);
    if (v > 1 && b < bad) bad = b;
  }
  if (sum != 0) atomicAdd(reinterpret_cast<unsigned long long*>(elements), sum);
  if (bad_block != nullptr && bad != ~0ull) {
    atomicMin(reinterpret_cast<unsigned long long*>(bad_block), bad);
  }
}

__global__ void resetScratch(uint64_t* plan, uint64_t nranks) {
  const SketchPlanScratch s = sketchPlanScratch(plan, nranks);
  *s.union_elements = 0;
  *s.bad_block = kNoSoleSelector;
}

__global__ void finishPlan(const uint64_t* headers, GatherPlanParams params, size_t count,
                           uint64_t* plan) {
  finishSketchPlan(headers, params, count, plan);
}

}  // namespace

cudaError_t markedElements(const uint8_t* bitmap, size_t count, size_t block, uint64_t* elements,
                           cudaStream_t stream) {
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  cudaError_t status = cudaMemsetAsync(elements, 0, sizeof(uint64_t), stream);
  if (status != cudaSuccess || blocks == 0) return status;
  countMarked<<<gridFor(blocks), kThreads, 0, stream>>>(bitmap, count, block, blocks, elements,
                                                        nullptr);
  return cudaGetLastError();
}

cudaError_t planSketch(const uint64_t* headers, const GatherPlanParams& params, size_t count,
                       size_t block, const uint8_t* union_bitmap, uint64_t* plan,
                       cudaStream_t stream) {
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  const SketchPlanScratch s = sketchPlanScratch(plan, params.nranks);
  resetScratch<<<1, 1, 0, stream>>>(plan, params.nranks);
  if (blocks > 0) {
    countMarked<<<gridFor(blocks), kThreads, 0, stream>>>(union_bitmap, count, block, blocks,
                                                          s.union_elements, s.bad_block);
  }
  finishPlan<<<1, 1, 0, stream>>>(headers, params, count, plan);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
