#include "algorithms/sent_mask.h"

#include "core/dtype.h"
#include "kernels/kernels.h"
#include "sparsifier/sparsifier.h"

namespace sccl {

scclResult_t maskEverything(const scclSparsifier& sp, void* buffer, scclDataType_t dtype) {
  return cpuKernels().fillZero(buffer, sp.count * dataTypeSize(dtype), nullptr);
}

scclResult_t maskGlobalIndices(const scclSparsifier& sp, void* buffer, scclDataType_t dtype) {
  // The list is checked and ascending when the call assembles it (assembleGlobalIndices).
  return cpuKernels().zeroAt(buffer, dtype, sp.global_indices.data(), sp.global_indices.size(),
                             nullptr);
}

}  // namespace sccl
