// CudaDeviceStaging: see device_staging_cuda.h.
#include "cuda/device_staging_cuda.h"

#include <algorithm>
#include <vector>

#include "algorithms/call_header.h"
#include "core/dtype.h"
#include "core/error.h"
#include "cuda/cuda_status.h"

namespace sccl {

CudaDeviceStaging::~CudaDeviceStaging() {
  for (Pinned& p : host_) {
    if (p.memory != nullptr) cudaFreeHost(p.memory);
  }
}

scclResult_t CudaDeviceStaging::buffer(Buffer which, size_t bytes, void** out) {
  return buffers_[which].reserve(bytes, out);
}

scclResult_t CudaDeviceStaging::hostBuffer(HostBuffer which, size_t bytes, void** out) {
  Pinned& p = host_[which];
  if (p.bytes < bytes) {
    // Earlier copies into the old buffer must be complete before it goes.
    SCCL_CUDA_CHECK(cudaStreamSynchronize(stream_), "device staging: host buffer");
    if (p.memory != nullptr) cudaFreeHost(p.memory);
    p.memory = nullptr;
    p.bytes = 0;
    const size_t grown = std::max(bytes, size_t(4096));
    SCCL_CUDA_CHECK(cudaMallocHost(&p.memory, grown), "device staging: page-locked host buffer");
    p.bytes = grown;
  }
  *out = p.memory;
  return scclSuccess;
}

scclResult_t CudaDeviceStaging::toHost(void* host, const void* device, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  SCCL_CHECK(readBack(host, device, bytes));
  return synchronize();
}

scclResult_t CudaDeviceStaging::readBack(void* host, const void* device, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  SCCL_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_),
                  "device staging: copy to the host");
  ++counters_.to_host;
  counters_.to_host_bytes += bytes;
  return scclSuccess;
}

scclResult_t CudaDeviceStaging::toDevice(void* device, const void* host, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  ++counters_.to_device;
  counters_.to_device_bytes += bytes;
  // From pageable memory the call returns once the bytes are staged: the host array may change.
  SCCL_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_),
                  "device staging: copy to the device");
  return scclSuccess;
}

scclResult_t CudaDeviceStaging::copyOnDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  SCCL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
                  "device staging: copy on the device");
  return scclSuccess;
}

scclResult_t CudaDeviceStaging::synchronize() {
  ++counters_.waits;
  SCCL_CUDA_CHECK(cudaStreamSynchronize(stream_), "device staging: the call's kernels");
  return scclSuccess;
}

// The host reduction's pattern (fillWithNaN), written from the host; waits for the copy.
scclResult_t CudaDeviceStaging::fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) {
  const size_t bytes = count * dataTypeSize(dtype);
  std::vector<unsigned char> pattern(bytes);
  fillWithNaN(pattern.data(), count, dtype);
  SCCL_CUDA_CHECK(cudaMemcpyAsync(recvbuf, pattern.data(), bytes, cudaMemcpyHostToDevice, stream_),
                  "device sparse all-reduce: NaN output");
  SCCL_CUDA_CHECK(cudaStreamSynchronize(stream_), "device sparse all-reduce: NaN output");
  return scclSuccess;
}

scclResult_t CudaDeviceStaging::divideByRanks(void* x, size_t count, scclDataType_t dtype,
                                              int nranks) {
  return kernels_.divideByRanks(x, dtype, count, nranks, stream_);
}

}  // namespace sccl
