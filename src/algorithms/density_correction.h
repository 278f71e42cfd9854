// In-call density correction of the gather reduction (config densityCorrection "histogram"):
// replaces the threshold carried over from the last call by the one that selects about k
// entries of this call's accumulated gradient, from a count of its tail (made in the pass that
// accumulates it, algorithms/gather_reduction.cc) and one small all-reduce.
// See density_correction.cc for the steps and docs/algorithms/density_correction.md.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "partition/search_space.h"

namespace sccl {

// The bins of one call: 2 W B bin edges in the accumulator type's bit patterns around the
// estimator's threshold (step 1 of density_correction.cc), plus one bin for everything above.
struct CorrectionWindow {
  uint64_t base = 0;   // bit pattern of edge 0
  unsigned shift = 0;  // a bin is 2^shift patterns
  size_t bins = 0;     // window bins; counts[bins] is everything above
};

CorrectionWindow correctionWindow(const scclSparsifier& sp);

// Edge 0 read back as a value: a selection at or above it holds every element the window counts,
// which is what lets the fused pass (KernelBackend::accumulateSelect) count and select at once.
double windowFloor(const CorrectionWindow& w, scclDataType_t acc_dtype);

// Collective, steps 2-4: every rank calls it at the same call with its own counts of `w` (bins + 1
// entries, its exclusive range; zeros for an empty range), which are all-reduced in place. On
// success *threshold is the corrected threshold, adopted by the estimator, and *predicted_k the
// number of entries all ranks together hold at or above it (exactly, before any
// max_density_slack cap).
scclResult_t correctFromCounts(SparseCall& call, const CorrectionWindow& w,
                               std::vector<uint64_t>& counts, double* threshold,
                               uint64_t* predicted_k);

}  // namespace sccl
