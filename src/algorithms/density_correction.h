// In-call density correction of the gather reduction (config densityCorrection "histogram"):
// replaces the threshold carried over from the last call by the one that selects about k
// entries of this call's accumulated gradient, from a count of its tail (made in the pass that
// accumulates it, algorithms/gather_reduction.cc) and one small all-reduce.
// See density_correction.cc for the steps and docs/algorithms/density_correction.md.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "estimators/magnitude_window.h"
#include "partition/search_space.h"

namespace sccl {

// The bins of one call: 2 W B bin edges in the accumulator type's bit patterns around the
// estimator's threshold (step 1 of density_correction.cc), plus one bin for everything above.
struct CorrectionWindow : MagnitudeWindow {
  // The edge at or below a quarter octave under the threshold: the fused pass counts (and keeps
  // as candidates) only the entries from here up, a few times k instead of the whole lower half
  // of the window; correctFromCounts falls back to the whole window when that is not enough.
  size_t floor_edge = 0;
};

CorrectionWindow correctionWindow(const ReductionContext& ctx);

// Collective, steps 2-4: every rank calls it at the same call with its own counts of `w` (bins + 1
// entries, its exclusive range; zeros for an empty range), exact from edge `counted_from` up (the
// bins below may be short), which are all-reduced in place. When all ranks together hold at
// least k entries from that edge up, the edge nearest k is at or above it and the same as the
// whole window would give (the counts below could only add to an error already larger): on
// success *decided is true, *threshold the corrected threshold, adopted by the estimator, and
// *predicted_k the number of entries all ranks together hold at or above it (exactly, before
// any max_density_slack cap). Otherwise *decided is false (the same on every rank) and the
// caller counts the whole window and calls again with counted_from = 0.
scclResult_t correctFromCounts(SparseCall& call, const CorrectionWindow& w,
                               std::vector<uint64_t>& counts, size_t counted_from,
                               double* threshold, uint64_t* predicted_k, bool* decided);

}  // namespace sccl
