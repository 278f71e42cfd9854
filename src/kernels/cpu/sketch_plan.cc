// The CPU backend's kernels of the device-resident S2 call (kernels.h, markedElements and
// planSketch): the passes over the bitmaps here, the decisions in kernels/shared/sketch_plan.h,
// which the CUDA backend runs too.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/shared/sketch_plan.h"

namespace sccl::cpu {

scclResult_t markedElements(const uint8_t* bitmap, size_t count, size_t block, uint64_t* elements) {
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  uint64_t total = 0;
  for (size_t b = 0; b < blocks; ++b) {
    if (bitmap[b] != 0) total += sketchBlockElements(b, count, block);
  }
  *elements = total;
  return scclSuccess;
}

scclResult_t planSketch(const uint64_t* headers, const GatherPlanParams& params, size_t count,
                        size_t block, const uint8_t* union_bitmap, uint64_t* plan) {
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  const SketchPlanScratch s = sketchPlanScratch(plan, params.nranks);
  *s.union_elements = 0;
  *s.bad_block = kNoSoleSelector;
  for (size_t b = 0; b < blocks; ++b) {
    if (union_bitmap[b] > 1 && *s.bad_block == kNoSoleSelector) *s.bad_block = b;
    if (union_bitmap[b] != 0) *s.union_elements += sketchBlockElements(b, count, block);
  }
  finishSketchPlan(headers, params, count, plan);
  return scclSuccess;
}

}  // namespace sccl::cpu
