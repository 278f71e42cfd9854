// What the pinned staging transport (pinned_staging_transport.h) needs of a device runtime: tell
// device pointers from host pointers, allocate page-locked host memory, and copy between the two.
// The CUDA runtime provides it in cuda/cuda_device_copier.cc; the unit tests provide a host-only
// one whose "device" memory is a registered set of allocations, so the staging logic is checked on
// machines without a GPU.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class DeviceCopier {
 public:
  virtual ~DeviceCopier() = default;

  virtual const char* name() const = 0;

  // Whether ptr points into device memory (never true for null).
  virtual bool isDevice(const void* ptr) const = 0;

  // Page-locked host memory of at least `bytes` bytes (> 0), released with freeHost.
  virtual scclResult_t allocateHost(size_t bytes, void** out) = 0;
  virtual void freeHost(void* ptr) = 0;

  // Copies that are complete when they return (the transport's contract is blocking).
  virtual scclResult_t toHost(void* host, const void* device, size_t bytes) = 0;
  virtual scclResult_t toDevice(void* device, const void* host, size_t bytes) = 0;
};

}  // namespace sccl
