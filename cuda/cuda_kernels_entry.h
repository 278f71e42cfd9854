// What the entry files of the CUDA backend (cuda_kernels*.cc) share: the caller's stream as CUDA's
// type, and CUB's two-phase temporary storage (ask for the bytes, then run) on the workspace.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/cuda_kernels.h"
#include "cuda/cuda_status.h"

namespace sccl {

inline cudaStream_t asCudaStream(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

template <typename Run>
scclResult_t CudaKernels::withTemp(const char* what, Run&& run) const {
  size_t bytes = 0;
  SCCL_CUDA_CHECK(run(nullptr, &bytes), what);
  void* temp = nullptr;
  SCCL_CHECK(workspace_.reserve(bytes, &temp));
  SCCL_CUDA_CHECK(run(temp, &bytes), what);
  return scclSuccess;
}

}  // namespace sccl
