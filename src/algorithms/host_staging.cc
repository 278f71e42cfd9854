// HostStaging: see host_staging.h.
#include "algorithms/host_staging.h"

#include <cstring>

#include "algorithms/call_header.h"
#include "core/divide_by_ranks.h"

namespace sccl {
namespace {

// Grows only (AlignedBuffer keeps its capacity), so a steady training loop allocates nothing.
void* sized(AlignedBuffer& b, size_t bytes) {
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

}  // namespace

scclResult_t HostStaging::buffer(Buffer which, size_t bytes, void** out) {
  *out = sized(buffers_[which], bytes > 0 ? bytes : 1);
  return scclSuccess;
}

scclResult_t HostStaging::hostBuffer(HostBuffer which, size_t bytes, void** out) {
  *out = sized(host_[which], bytes > 0 ? bytes : 1);
  return scclSuccess;
}

scclResult_t HostStaging::toHost(void* host, const void* device, size_t bytes) {
  if (bytes > 0 && host != device) std::memcpy(host, device, bytes);
  return scclSuccess;
}

scclResult_t HostStaging::readBack(void* host, const void* device, size_t bytes) {
  return toHost(host, device, bytes);
}

scclResult_t HostStaging::toDevice(void* device, const void* host, size_t bytes) {
  if (bytes > 0 && host != device) std::memcpy(device, host, bytes);
  return scclSuccess;
}

scclResult_t HostStaging::copyOnDevice(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return scclSuccess;
}

scclResult_t HostStaging::fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) {
  fillWithNaN(recvbuf, count, dtype);
  return scclSuccess;
}

scclResult_t HostStaging::divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) {
  return sccl::divideByRanks(x, count, dtype, nranks);
}

}  // namespace sccl
