// The CUDA backend's per-communicator workspace: one device buffer for CUB's temporary storage and
// the kernels' scratch, and one pinned host word for the count transfer of count-exchanging
// algorithms. It only grows (cudaMalloc on the first calls of a training loop, never in the steady
// state) and is freed with its owner. One stream at a time uses a workspace: the communicator's
// calls are ordered on the caller's stream, which is what makes the reuse safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class CudaWorkspace {
 public:
  CudaWorkspace() = default;
  ~CudaWorkspace();
  CudaWorkspace(const CudaWorkspace&) = delete;
  CudaWorkspace& operator=(const CudaWorkspace&) = delete;

  // At least `bytes` of device memory, 256-byte aligned, valid until the next reserve. Growing
  // waits for the stream's earlier work on the old buffer (cudaFree synchronises) first.
  scclResult_t reserve(size_t bytes, void** device);

  // The pinned host word the one device-to-host count transfer lands in.
  scclResult_t hostCount(uint64_t** host);

  size_t capacity() const { return bytes_; }

 private:
  void* device_ = nullptr;
  size_t bytes_ = 0;
  uint64_t* host_count_ = nullptr;
};

}  // namespace sccl
