// In-call density correction of the gather reduction (config densityCorrection "histogram"):
// replaces the threshold carried over from the last call by the one that selects about k
// entries of this call's accumulated gradient, from one counting pass and one small all-reduce.
// See density_correction.cc for the steps and docs/algorithms/density_correction.md.
#pragma once

#include <cstdint>

#include "algorithms/algorithm.h"
#include "partition/search_space.h"

namespace sccl {

// Collective: every rank calls it at the same call with its own exclusive range (empty ranges
// included) and the threshold every rank shares (the estimator's). On success *threshold is the
// corrected threshold and *predicted_k the number of entries all ranks together will select at
// it (exactly, before any max_density_slack cap).
scclResult_t correctThreshold(SparseCall& call, IndexRange range, double* threshold,
                              uint64_t* predicted_k);

}  // namespace sccl
