// The union call: Top-k or a threshold over the whole vector (or any search space), with indices,
// values and counts in the kernels' memory and one read-back per call (resident_union.cc has the
// steps and bytes).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"

namespace sccl {

// Whether the sparsifier's call can run as a union call: the gather reduction with any estimator
// (top-k, a threshold, DGC's trimmed one), every rank selecting (no sole selector),
// without the density correction or max_density_slack. The global list is the sorted union of the
// slices, over the whole vector or over exclusive ranges (disjoint slices, merged); the resident
// gather (residentGatherApplies, asked first) takes the exclusive searches whose threshold is
// known before the data.
bool residentUnionApplies(const ReductionContext& ctx);

// One call on call.kernels / call.device / call.stream (set), accumulator and residual in
// `vectors`, the collectives through `exchange`. Errors of the checks come back from the call
// itself, as on the host (the plan is read back before anything is written). On return call
// holds the counts and bytes; the residual swap is the caller's (runStagedCall).
// pass_candidates: the kernels' fused pass keeps candidates and reports their count to the host
// at once (the CPU backend on host buffers, runGatherReduction): top-k keeps every entry at or
// above a quarter octave below the last call's k-th value and, when at least k qualified and all
// fit, selects among them without reading the range again (selectTopKCandidates).
scclResult_t runResidentUnion(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors,
                              bool pass_candidates = false);

}  // namespace sccl
