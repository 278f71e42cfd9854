// The device-resident S2 call: the sketch reduction with the block selection, the bitmaps, the
// checks, the table and the decode in the kernels' memory and one read-back per call
// (resident_sketch.cc has the steps and bytes).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"

namespace sccl {

// Whether the sparsifier's call can run as a resident S2 call: the sketch reduction, either
// block selection and either residual rule.
bool residentSketchApplies(const scclSparsifier& sp);

// One call on call.kernels / call.device / call.stream (set), accumulator and residual in
// `vectors`, the collectives through `exchange`. Errors of the checks come back from the call
// itself, as on the host (the plan is read back before anything is written). On return call
// holds the counts and bytes; the residual swap is the caller's (runStagedCall).
scclResult_t runResidentSketch(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors);

}  // namespace sccl
