// Trimming a selection to a number of entries: keep the largest |x|, and among entries equal to
// the cut-off value keep the lowest indices. Used for exact top-k (ties at the k-th value) and
// for the max_density_slack cap. Deterministic, in place, order preserved.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// idx[0..n) ascending indices into acc (float32 or float64). Keeps every entry with
// |acc| > cutoff and as many entries with |acc| == cutoff as fit in `keep`; returns the new count.
size_t trimSelection(const void* acc, scclDataType_t acc_dtype, int64_t* idx, size_t n, size_t keep,
                     double cutoff);

// trimSelection over values aligned with the indices (values[j] = acc[idx[j]], float32 or
// float64): the same entries kept, idx and values compacted together. For a selection whose
// values were copied from the device.
size_t trimAlignedSelection(void* values, scclDataType_t dtype, int64_t* idx, size_t n, size_t keep,
                            double cutoff);

// The cap-th largest |acc| among the selected entries (cap in [1, n]); `scratch` holds n values.
scclResult_t cutoffAmongSelected(const void* acc, scclDataType_t acc_dtype, const int64_t* idx,
                                 size_t n, size_t cap, void* scratch, double* cutoff);

}  // namespace sccl
