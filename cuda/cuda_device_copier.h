// The CUDA runtime as the pinned staging transport's device copier
// (transports/staging/device_copier.h): device pointers recognised by cudaPointerGetAttributes,
// page-locked memory from cudaHostAlloc, copies on a non-blocking stream of the copier's own,
// waited for before they return.
#pragma once

#include <memory>

#include "transports/staging/device_copier.h"

namespace sccl {

// A copier whose stream belongs to the calling thread's current device.
scclResult_t createCudaDeviceCopier(std::unique_ptr<DeviceCopier>* out);

}  // namespace sccl
