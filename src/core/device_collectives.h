// The public dense collectives (scclAllReduce, scclAllGather, scclBroadcast) on device buffers:
// the communicator's transport must carry device memory (NCCL); its operations block on the
// transport's own stream, so the caller's stream is synchronised before the transport reads the
// buffers, and the steps the API adds (scclAvg's division, the root's copy of a broadcast) run
// on the caller's stream. Implemented by cuda/device_collectives.cc with the CUDA kernels and by
// cuda/device_paths_unavailable.cc (refused) otherwise.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

struct scclComm;

namespace sccl {

// The build has the kernels and the transport carries device memory (else scclInvalidUsage, no
// side effect); then waits for the caller's stream.
scclResult_t prepareDeviceCollective(scclComm* comm, void* stream);

// buffer = buffer / nranks on the caller's stream, bitwise the host division (core/average.h).
scclResult_t deviceDivideByRanks(void* buffer, size_t count, scclDataType_t dtype, int nranks,
                                 void* stream);

// dst = src (device memory), complete when it returns.
scclResult_t deviceCopy(void* dst, const void* src, size_t bytes, void* stream);

}  // namespace sccl
