// scclPartitionedSelect on device buffers: the entry the device backend provides (api_select.cc
// routes device buffers here in a build with the CUDA kernels; cuda/device_select.cc implements
// it with the calling thread's CudaKernels, so its workspace is reused across calls and never
// shared between threads). Declared in the kernel layer so that the API includes no backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// buf, idx and val (may be null) are device memory, nselected host memory, stream a
// cudaStream_t (null: the legacy default stream). Synchronises the stream to read the count.
scclResult_t deviceSelectAbove(const void* buf, scclDataType_t dtype, size_t begin, size_t end,
                               double threshold, int64_t* idx, void* val, size_t capacity,
                               size_t* nselected, void* stream);

}  // namespace sccl
