// The device-resident S2 call's plan on the GPU (KernelBackend::planSketch): one grid pass over
// the gathered bitmaps (y: the rank, x: its blocks) for every rank's marked elements and the
// lowest rank with a byte other than 0 or 1, one over the blocks for the union and its elements,
// then finishSketchPlan (kernels/shared/sketch_plan.h, the CPU's decisions) in one thread. Every
// sum is of integers (atomic adds in any order give the CPU's result).
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/sketch_plan.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

__global__ void resetScratch(uint64_t* plan, uint64_t nranks) {
  const SketchPlanScratch s = sketchPlanScratch(plan, nranks);
  for (size_t r = globalThread(); r < nranks; r += gridThreads()) s.rank_elements[r] = 0;
  if (globalThread() == 0) {
    *s.union_elements = 0;
    *s.bad_rank = kNoSoleSelector;
  }
}

__global__ void countRankBlocks(const uint64_t* records, size_t record_words, size_t count,
                                size_t block, size_t blocks, uint64_t* plan, uint64_t nranks) {
  const SketchPlanScratch s = sketchPlanScratch(plan, nranks);
  const uint64_t r = blockIdx.y;
  const auto* bitmap =
      reinterpret_cast<const uint8_t*>(records + r * record_words + kGatherRecordHeaderWords);
  unsigned long long elements = 0;
  bool bad = false;
  for (size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += size_t(gridDim.x) * blockDim.x) {
    if (bitmap[b] > 1) bad = true;
    if (bitmap[b] == 1) elements += sketchBlockElements(b, count, block);
  }
  if (elements != 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(s.rank_elements + r), elements);
  }
  if (bad) atomicMin(reinterpret_cast<unsigned long long*>(s.bad_rank), (unsigned long long)r);
}

__global__ void unionBlocks(const uint64_t* records, size_t record_words, size_t count,
                            size_t block, size_t blocks, uint8_t* union_bitmap, uint64_t* plan,
                            uint64_t nranks) {
  const SketchPlanScratch s = sketchPlanScratch(plan, nranks);
  unsigned long long elements = 0;
  for (size_t b = globalThread(); b < blocks; b += gridThreads()) {
    uint8_t marked = 0;
    for (uint64_t r = 0; r < nranks; ++r) {
      const auto* bitmap =
          reinterpret_cast<const uint8_t*>(records + r * record_words + kGatherRecordHeaderWords);
      if (bitmap[b] == 1) marked = 1;
    }
    union_bitmap[b] = marked;
    if (marked != 0) elements += sketchBlockElements(b, count, block);
  }
  if (elements != 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(s.union_elements), elements);
  }
}

__global__ void finishPlan(const uint64_t* records, GatherPlanParams params, size_t blocks,
                           uint64_t* plan) {
  finishSketchPlan(records, params, blocks, plan);
}

}  // namespace

cudaError_t planSketch(const uint64_t* records, const GatherPlanParams& params, size_t count,
                       size_t block, uint8_t* union_bitmap, uint64_t* plan, cudaStream_t stream) {
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  const size_t record_words = sketchRecordWords(blocks);
  const uint64_t n = params.nranks;
  resetScratch<<<1, kThreads, 0, stream>>>(plan, n);
  if (blocks > 0 && n > 0) {
    const dim3 grid(gridFor(blocks), unsigned(n));
    countRankBlocks<<<grid, kThreads, 0, stream>>>(records, record_words, count, block, blocks,
                                                   plan, n);
    unionBlocks<<<gridFor(blocks), kThreads, 0, stream>>>(records, record_words, count, block,
                                                          blocks, union_bitmap, plan, n);
  }
  finishPlan<<<1, 1, 0, stream>>>(records, params, blocks, plan);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
