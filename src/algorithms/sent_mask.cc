#include "algorithms/sent_mask.h"

#include "core/dtype.h"
#include "kernels/kernels.h"
#include "algorithms/reduction_context.h"

namespace sccl {

scclResult_t maskEverything(const ReductionContext& ctx, void* buffer, scclDataType_t dtype) {
  return cpuKernels().fillZero(buffer, ctx.count * dataTypeSize(dtype), nullptr);
}

scclResult_t maskGlobalIndices(const ReductionContext& ctx, void* buffer, scclDataType_t dtype) {
  // The list is checked and ascending when the call assembles it (assembleGlobalIndices).
  return cpuKernels().zeroAt(buffer, dtype, ctx.global_indices.data(), ctx.global_indices.size(),
                             nullptr);
}

}  // namespace sccl
