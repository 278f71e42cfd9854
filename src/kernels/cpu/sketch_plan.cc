// The CPU backend's plan of the device-resident S2 call (kernels.h, planSketch): the passes over
// the bitmaps here, the decisions in kernels/shared/sketch_plan.h, which the CUDA backend runs too.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/shared/sketch_plan.h"

namespace sccl::cpu {

scclResult_t planSketch(const uint64_t* records, const GatherPlanParams& params, size_t count,
                        size_t block, uint8_t* union_bitmap, uint64_t* plan) {
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  const size_t record_words = sketchRecordWords(blocks);
  const SketchPlanScratch s = sketchPlanScratch(plan, params.nranks);
  std::fill(s.rank_elements, s.rank_elements + params.nranks, uint64_t{0});
  *s.union_elements = 0;
  *s.bad_rank = kNoSoleSelector;
  std::fill(union_bitmap, union_bitmap + blocks, uint8_t{0});
  for (uint64_t r = 0; r < params.nranks; ++r) {
    const auto* bitmap =
        reinterpret_cast<const uint8_t*>(records + r * record_words + kGatherRecordHeaderWords);
    for (size_t b = 0; b < blocks; ++b) {
      if (bitmap[b] > 1) *s.bad_rank = std::min<uint64_t>(*s.bad_rank, r);
      if (bitmap[b] != 1) continue;
      s.rank_elements[r] += sketchBlockElements(b, count, block);
      union_bitmap[b] = 1;
    }
  }
  for (size_t b = 0; b < blocks; ++b) {
    if (union_bitmap[b] != 0) *s.union_elements += sketchBlockElements(b, count, block);
  }
  finishSketchPlan(records, params, blocks, plan);
  return scclSuccess;
}

}  // namespace sccl::cpu
