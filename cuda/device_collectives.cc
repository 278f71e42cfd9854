// The public dense collectives on device buffers (core/device_collectives.h).
#include "core/device_collectives.h"

#include <cuda_runtime_api.h>

#include "core/comm.h"
#include "core/error.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_status.h"

namespace sccl {

scclResult_t prepareDeviceCollective(scclComm* comm, void* stream) {
  if (!comm->transport->capabilities().device_memory) {
    return fail(scclInvalidUsage,
                "buffers are GPU memory, but transport '%s' carries host memory only "
                "(SCCL_TRANSPORT=nccl for device buffers)",
                comm->transport->name());
  }
  SCCL_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                  "collective on device buffers: the caller's stream");
  return scclSuccess;
}

scclResult_t deviceDivideByRanks(void* buffer, size_t count, scclDataType_t dtype, int nranks,
                                 void* stream) {
  // Stateless kernel (no workspace): a backend object per call costs nothing.
  return CudaKernels().divideByRanks(buffer, dtype, count, nranks, stream);
}

scclResult_t deviceCopy(void* dst, const void* src, size_t bytes, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  SCCL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s),
                  "broadcast on device buffers: the root's copy");
  SCCL_CUDA_CHECK(cudaStreamSynchronize(s), "broadcast on device buffers: the root's copy");
  return scclSuccess;
}

}  // namespace sccl
