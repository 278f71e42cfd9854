// deviceSelectAbove (kernels/device_select.h) on the CUDA backend.
#include "kernels/device_select.h"

#include "cuda/cuda_kernels.h"

namespace sccl {

scclResult_t deviceSelectAbove(const void* buf, scclDataType_t dtype, size_t begin, size_t end,
                               double threshold, int64_t* idx, void* val, size_t capacity,
                               size_t* nselected, void* stream) {
  thread_local CudaKernels kernels;
  return kernels.selectAbove(buf, dtype, begin, end, threshold, idx, val, capacity, nselected,
                             stream);
}

}  // namespace sccl
