// The public dense collectives on device buffers (core/device_collectives.h), and the transport
// every device path uses (prepareDeviceTransport).
#include "core/device_collectives.h"

#include <cuda_runtime_api.h>

#include "comm/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "cuda/cuda_device_copier.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_status.h"
#include "transports/staging/pinned_staging_transport.h"

namespace sccl {

scclResult_t prepareDeviceTransport(scclComm* comm) {
  if (comm->transport->capabilities().device_memory || comm->device_transport) return scclSuccess;
  std::unique_ptr<DeviceCopier> copier;
  SCCL_CHECK(createCudaDeviceCopier(&copier));
  comm->device_transport = std::make_unique<PinnedStagingTransport>(&comm->transport,
                                                                    std::move(copier));
  SCCL_INFO(LogSubsys::Init,
            "comm %p rank %d: device buffers over transport '%s' through pinned host staging",
            static_cast<void*>(comm), comm->rank, comm->transport->name());
  return scclSuccess;
}

scclResult_t prepareDeviceCollective(scclComm* comm, void* stream) {
  SCCL_CHECK(prepareDeviceTransport(comm));
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
