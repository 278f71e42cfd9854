// The S2 call (sketch_call.cc has the steps and bytes), written once against the kernel interface
// for host and device buffers: on device buffers with the CUDA backend and the staging, nothing
// read back per call (the "topk" selection; "nonzero" reads its plan back); on host buffers with
// the CPU backend, host memory as the kernels' memory (host_staging.h) and the communicator's
// transport in place (HostExchange).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"

namespace sccl {

// Whether the sparsifier's reduction is the sketch reduction (S2: either block selection and
// either residual rule), which runs this call on buffers of either kind.
bool isSketchCall(const ReductionContext& ctx);

// Whether an S2 call on memory with a sticky fault word (StagedVectors::async_fault: device
// buffers) reads nothing back: the "topk" selection, whose table width and encode bound are known
// before the plan ("nonzero" sizes its table from the plan's largest count and reads it back).
bool sketchReadsNoPlan(const ReductionContext& ctx);

// One call on call.kernels / call.device / call.stream (set), accumulator and residual in
// `vectors` (the gradient is accumulated here), the collectives through `exchange`. On return
// call holds the counts and bytes; the residual swap is the caller's (unconditional when
// call.outcome_on_device).
// With the plan read back (host buffers, the "nonzero" selection, no async_fault) the checks'
// errors come back from the call itself, before anything is written. Without (sketchReadsNoPlan
// and vectors.async_fault set) the device settles the call (kernels/shared/plan_settle.h): a
// failed check or non-finite values under scclNonFiniteError raise the sticky fault
// (settled_call.h); such a call, every later one and a discarded one fill recvbuf with NaN and
// keep the residual.
scclResult_t runSketchCall(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors);

// The statistics of the last call that read nothing back (its plan, the totals since the first),
// into *stats and ctx.rank_counts, as the host would have recorded them; nothing if there was
// none. Waits for `staging`'s stream.
scclResult_t sketchDeviceStats(const ReductionContext& ctx, DeviceStaging& staging,
                               scclSparseStats_t* stats);

}  // namespace sccl
