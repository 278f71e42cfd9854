// The public dense collectives (scclAllReduce, scclAllGather, scclBroadcast) on device buffers:
// over NCCL, or over a host transport through pinned staging (prepareDeviceTransport); the
// transport's operations block on a stream of its own, so the caller's stream is synchronised
// before the transport reads the buffers, and the steps the API adds (scclAvg's division, the root's copy of a broadcast) run
// on the caller's stream. Implemented by cuda/device_collectives.cc with the CUDA kernels and by
// cuda/device_paths_unavailable.cc (refused) otherwise.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

struct scclComm;

namespace sccl {

// Makes deviceTransportOf(comm) carry device memory: the communicator's transport when it does
// (NCCL), else a pinned staging adapter over it, created once and kept by the communicator.
// scclInvalidUsage in a build without the CUDA kernels.
scclResult_t prepareDeviceTransport(scclComm* comm);

// The build has the kernels and a transport for device buffers (prepareDeviceTransport, else
// scclInvalidUsage, no side effect); then waits for the caller's stream.
scclResult_t prepareDeviceCollective(scclComm* comm, void* stream);

// buffer = buffer / nranks on the caller's stream, bitwise the host division (core/divide_by_ranks.h).
scclResult_t deviceDivideByRanks(void* buffer, size_t count, scclDataType_t dtype, int nranks,
                                 void* stream);

// dst = src (device memory), complete when it returns.
scclResult_t deviceCopy(void* dst, const void* src, size_t bytes, void* stream);

}  // namespace sccl
