// Trimming a selection to a number of entries: keep the largest |x|, and among entries equal to
// the cut-off value keep the lowest indices. Used for exact top-k (ties at the k-th value) and
// for the max_density_slack cap. Deterministic, in place, order preserved.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// max_density_slack's cap on a rank's selection: max(1, min(count, ceil(k/n (1 + slack)))), or
// UINT64_MAX when the slack is off (< 0). The same on every rank.
uint64_t densitySlackCap(uint64_t k_target, int nranks, double max_density_slack, uint64_t count);

// idx[0..n) ascending indices with their values aligned (values[j] = acc[idx[j]], float32 or
// float64). Keeps every entry with |value| > cutoff and as many entries with |value| == cutoff
// as fit in `keep`, idx and values compacted together; returns the new count.
size_t trimAlignedSelection(void* values, scclDataType_t dtype, int64_t* idx, size_t n, size_t keep,
                            double cutoff);

}  // namespace sccl
