// Steps 0 and 1 of the gather reduction (gather_reduction.cc): accumulate this call's gradient,
// find the threshold and select this rank's entries, in as few passes over the vectors as the
// estimator allows (gather_selection.cc).
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "partition/search_space.h"

namespace sccl {

// Room for a selection over `range`: what is likely, not the whole range (which would cost 8
// bytes per element); the kernels report the exact count on overflow, so one retry suffices.
size_t likelySelection(const ReductionContext& ctx, IndexRange range, uint64_t k_local);

// Room for the density correction's candidates: what is wanted, at most a quarter of the range
// (12 bytes per candidate against 4 per element; past that a second selection pass over the
// range costs less memory traffic than the staging would).
size_t candidateRoom(IndexRange range, size_t wanted);

// The floor of the fused pass's candidates for an estimator that reads this call's data (top-k,
// SIDCo, DGC, RedSync, GaussianK) on host buffers: a quarter octave below its last threshold.
// Every entry at or above it is kept (with its value), so when this call's threshold is at or
// above the floor and the candidates fit their room, they hold the selection and the range is not
// read again; top-k even finds its k-th value among them when at least k qualify (every other
// entry is smaller). False: no floor (no finite positive last threshold: the first call).
bool candidateFloor(const ReductionContext& ctx, double* floor);

// Collective when the density correction is on (every rank calls it, selecting or not). On return
// call.acc holds residual + gradient, call.nonfinite_local its non-finite count, call.threshold
// the threshold used, ctx.local_indices[0, *selected) this rank's selection (ascending; empty
// when !selects).
scclResult_t accumulateAndSelect(SparseCall& call, IndexRange range, bool selects,
                                 size_t* selected);

}  // namespace sccl
