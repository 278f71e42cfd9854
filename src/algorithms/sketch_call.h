// The S2 call (sketch_call.cc has the steps and bytes), written once against the kernel interface
// for host and device buffers: on device buffers with the CUDA backend and the staging, one plan
// read back per call; on host buffers with the CPU backend, host memory as the kernels' memory
// (host_staging.h) and the communicator's transport in place (HostExchange).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"

namespace sccl {

// Whether the sparsifier's reduction is the sketch reduction (S2: either block selection and
// either residual rule), which runs this call on buffers of either kind.
bool isSketchCall(const ReductionContext& ctx);

// One call on call.kernels / call.device / call.stream (set), accumulator and residual in
// `vectors` (the gradient is accumulated here), the collectives through `exchange`. Errors of the
// checks come back from the call itself (the plan is read back before anything is written). On
// return call holds the counts and bytes; the residual swap is the caller's.
scclResult_t runSketchCall(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors);

}  // namespace sccl
