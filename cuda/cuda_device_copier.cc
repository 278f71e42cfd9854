// CudaDeviceCopier: see cuda_device_copier.h. Its own stream (not the caller's, not the legacy
// default stream): with several ranks as threads on one GPU, a copy must wait for neither
// another rank's kernels nor the legacy stream's implicit synchronisation; the device paths
// synchronise the caller's stream before a collective reads its buffers.
#include "cuda/cuda_device_copier.h"

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "core/memory_space.h"
#include "cuda/cuda_status.h"

namespace sccl {
namespace {

class CudaDeviceCopier final : public DeviceCopier {
 public:
  explicit CudaDeviceCopier(cudaStream_t stream) : stream_(stream) {}
  ~CudaDeviceCopier() override { (void)cudaStreamDestroy(stream_); }
  CudaDeviceCopier(const CudaDeviceCopier&) = delete;
  CudaDeviceCopier& operator=(const CudaDeviceCopier&) = delete;

  const char* name() const override { return "cuda"; }

  bool isDevice(const void* ptr) const override {
    return ptr != nullptr && memorySpaceOf(ptr) == MemorySpace::Device;
  }

  scclResult_t allocateHost(size_t bytes, void** out) override {
    SCCL_CUDA_CHECK(cudaHostAlloc(out, bytes, cudaHostAllocDefault),
                    "pinned staging: page-locked host buffer");
    return scclSuccess;
  }

  void freeHost(void* ptr) override { (void)cudaFreeHost(ptr); }

  scclResult_t toHost(void* host, const void* device, size_t bytes) override {
    SCCL_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_),
                    "pinned staging: copy to the host");
    SCCL_CUDA_CHECK(cudaStreamSynchronize(stream_), "pinned staging: copy to the host");
    return scclSuccess;
  }

  scclResult_t toDevice(void* device, const void* host, size_t bytes) override {
    SCCL_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_),
                    "pinned staging: copy to the device");
    SCCL_CUDA_CHECK(cudaStreamSynchronize(stream_), "pinned staging: copy to the device");
    return scclSuccess;
  }

 private:
  cudaStream_t stream_;
};

}  // namespace

scclResult_t createCudaDeviceCopier(std::unique_ptr<DeviceCopier>* out) {
  cudaStream_t stream = nullptr;
  SCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                  "pinned staging: its copy stream");
  *out = std::make_unique<CudaDeviceCopier>(stream);
  return scclSuccess;
}

}  // namespace sccl
