#include "cuda/cuda_status.h"

namespace sccl {

scclResult_t cudaFailure(cudaError_t error, const char* what) {
  // A launch error is sticky until read; read it so it does not surface in the caller's next
  // unrelated CUDA call as well.
  (void)cudaGetLastError();
  return fail(scclUnhandledCudaError, "%s: CUDA error %d %s (%s)", what, static_cast<int>(error),
              cudaGetErrorName(error), cudaGetErrorString(error));
}

}  // namespace sccl
