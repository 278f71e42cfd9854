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
  ~CudaDeviceStaging() override;
  CudaDeviceStaging(const CudaDeviceStaging&) = delete;
  CudaDeviceStaging& operator=(const CudaDeviceStaging&) = delete;

  // The stream of the call about to run.
  void setStream(cudaStream_t stream) { stream_ = stream; }

  scclResult_t buffer(Buffer which, size_t bytes, void** out) override;
  // Page-locked (cudaMallocHost), so that readBack and toDevice are asynchronous copies.
  scclResult_t hostBuffer(HostBuffer which, size_t bytes, void** out) override;
  scclResult_t toHost(void* host, const void* device, size_t bytes) override;
  scclResult_t readBack(void* host, const void* device, size_t bytes) override;
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override;
  scclResult_t copyOnDevice(void* dst, const void* src, size_t bytes) override;
  scclResult_t synchronize() override;
  scclResult_t fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) override;
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override;
  // Copies and waits (launches: not counted here; tools/cuda_call_count counts the runtime's).
  Counters counters() const override { return counters_; }

 private:
  const CudaKernels& kernels_;
  cudaStream_t stream_ = nullptr;
  CudaWorkspace buffers_[kBufferCount];
  struct Pinned {
    void* memory = nullptr;
    size_t bytes = 0;
  };
  Pinned host_[kHostBufferCount];
  Counters counters_;
};

}  // namespace sccl
