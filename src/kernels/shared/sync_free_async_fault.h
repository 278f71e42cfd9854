// The asynchronous error of a device call that reads nothing back (the sync_free call, S2 on device
// buffers): one 64-bit word in pinned host memory that a kernel of the call sets (one thread, one
// store) when the call's checks fail, and that scclSparsifierGetAsyncError reads without waiting
// for the GPU. Compiled for both sides so that the encoding has one definition. Sticky: the first
// fault stays until scclSparsifierReset.
// Layout: fault kind in bits 56-63, rank + 1 in bits 32-55 (0: no rank named), the call number's
// low 32 bits in bits 0-31.
#pragma once

#include <cstdint>

#include "kernels/shared/host_device.h"

namespace sccl {

enum class AsyncFault : uint32_t {
  None = 0,
  OtherCall = 1,           // a peer at another call or config: scclInvalidUsage
  CountAboveCapacity = 2,  // a peer claims a count it may not send: scclRemoteError
  IndexOutOfRange = 3,     // a peer's index outside its range or not ascending: scclRemoteError
  NonFinite = 4,           // non-finite values under scclNonFiniteError: scclInvalidArgument
  BadBitmap = 5,           // a byte other than 0 or 1 in S2's union of bitmaps: scclRemoteError
};

SCCL_HOST_DEVICE inline uint64_t encodeAsyncFault(AsyncFault fault, int rank, uint64_t call) {
  const uint64_t named = rank < 0 ? 0 : (uint64_t(rank) + 1) & 0xffffffull;
  return (uint64_t(fault) << 56) | (named << 32) | (call & 0xffffffffull);
}

SCCL_HOST_DEVICE inline AsyncFault asyncFaultKind(uint64_t word) {
  return AsyncFault(uint32_t(word >> 56));
}

// The rank the fault names, or -1.
SCCL_HOST_DEVICE inline int asyncFaultRank(uint64_t word) {
  return int((word >> 32) & 0xffffffull) - 1;
}

SCCL_HOST_DEVICE inline uint32_t asyncFaultCall(uint64_t word) {
  return uint32_t(word & 0xffffffffull);
}

}  // namespace sccl
