#include "cuda/workspace.h"

#include <cuda_runtime_api.h>

#include "cuda/cuda_status.h"

namespace sccl {

CudaWorkspace::~CudaWorkspace() {
  if (device_ != nullptr) (void)cudaFree(device_);
  if (host_count_ != nullptr) (void)cudaFreeHost(host_count_);
}

scclResult_t CudaWorkspace::reserve(size_t bytes, void** device) {
  if (bytes > bytes_ || device_ == nullptr) {
    // Grow by at least half so that a slowly growing request settles after a few calls.
    size_t grown = bytes_ + bytes_ / 2;
    if (grown < bytes) grown = bytes;
    if (grown < 256) grown = 256;
    void* fresh = nullptr;
    SCCL_CUDA_CHECK(cudaMalloc(&fresh, grown), "CUDA workspace: cudaMalloc");
    if (device_ != nullptr) (void)cudaFree(device_);
    device_ = fresh;
    bytes_ = grown;
  }
  *device = device_;
  return scclSuccess;
}

scclResult_t CudaWorkspace::hostCount(uint64_t** host) {
  if (host_count_ == nullptr) {
    void* pinned = nullptr;
    SCCL_CUDA_CHECK(cudaMallocHost(&pinned, sizeof(uint64_t)), "CUDA workspace: cudaMallocHost");
    host_count_ = static_cast<uint64_t*>(pinned);
  }
  *host = host_count_;
  return scclSuccess;
}

}  // namespace sccl
