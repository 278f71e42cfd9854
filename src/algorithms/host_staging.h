// The kernels' memory on the host: a DeviceStaging whose buffers are host memory, its copies
// memcpy and its waits nothing, so that a call written against the kernel interface (the S2 call,
// sketch_call.cc) runs on host buffers with the CPU backend, the same code as on a GPU.
#pragma once

#include "core/aligned_buffer.h"
#include "kernels/device_staging.h"

namespace sccl {

class HostStaging final : public DeviceStaging {
 public:
  scclResult_t buffer(Buffer which, size_t bytes, void** out) override;
  scclResult_t hostBuffer(HostBuffer which, size_t bytes, void** out) override;
  scclResult_t toHost(void* host, const void* device, size_t bytes) override;
  scclResult_t readBack(void* host, const void* device, size_t bytes) override;
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override;
  scclResult_t copyOnDevice(void* dst, const void* src, size_t bytes) override;
  scclResult_t synchronize() override { return scclSuccess; }
  scclResult_t fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) override;
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override;

 private:
  AlignedBuffer buffers_[kBufferCount];
  AlignedBuffer host_[kHostBufferCount];
};

}  // namespace sccl
