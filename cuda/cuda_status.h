// CUDA errors as scclResult_t: scclUnhandledCudaError with the runtime's name and text of the
// error in scclGetLastError, described once where it is first known.
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace sccl {

scclResult_t cudaFailure(cudaError_t error, const char* what);

}  // namespace sccl

#define SCCL_CUDA_CHECK(call, what)                       \
  do {                                                    \
    cudaError_t sccl_cuda_error_ = (call);                \
    if (sccl_cuda_error_ != cudaSuccess) {                \
      return ::sccl::cudaFailure(sccl_cuda_error_, what); \
    }                                                     \
  } while (0)
