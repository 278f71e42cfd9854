// DeviceStaging (kernels/device_staging.h) on the CUDA runtime: one growing device buffer per
// purpose, copies and waits on the call's stream, the NaN output and scclAvg's division by the
// CUDA backend. One per device sparsifier (cuda/device_sparsifier_state.h), so a training loop's
// steady state allocates nothing.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/device_staging.h"
#include "cuda/cuda_kernels.h"
#include "cuda/workspace.h"

namespace sccl {

class CudaDeviceStaging final : public DeviceStaging {
 public:
  explicit CudaDeviceStaging(const CudaKernels& kernels) : kernels_(kernels) {}

  // The stream of the call about to run.
  void setStream(cudaStream_t stream) { stream_ = stream; }

  scclResult_t buffer(Buffer which, size_t bytes, void** out) override;
  scclResult_t toHost(void* host, const void* device, size_t bytes) override;
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override;
  scclResult_t synchronize() override;
  scclResult_t fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) override;
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override;

 private:
  const CudaKernels& kernels_;
  cudaStream_t stream_ = nullptr;
  CudaWorkspace buffers_[kBufferCount];
};

}  // namespace sccl
