// A window of magnitude bins around a threshold, in the accumulator type's bit patterns, and the
// choice of the bin edge whose count is nearest a target. Shared by the density correction
// (algorithms/density_correction.cc, counts all-reduced over the ranks) and SIDCo's count check
// (estimators/sidco_multistage.cc, one rank's range). The bins are those of
// KernelBackend::absBitHistogram: an edge read back as a value splits the elements exactly as
// selectAbove() with that threshold does, so the count at or above every edge is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

struct MagnitudeWindow {
  uint64_t base = 0;   // bit pattern of edge 0
  unsigned shift = 0;  // a bin is 2^shift patterns
  size_t bins = 0;     // window bins; counts[bins] is everything above
};

// bins_below + bins_above bins of 1 / bins_per_octave octave (a power of two), edge 0 at the bin
// edge at or below centre * 2^-(bins_below / bins_per_octave); clamped so that the top edge is
// at most +inf's pattern.
MagnitudeWindow magnitudeWindowAround(double centre, scclDataType_t acc_dtype, int bins_per_octave,
                                      int bins_below, int bins_above);

// |value| as the accumulator type's bit pattern (float32: narrowed, at most FLT_MAX).
uint64_t magnitudeBits(double value, scclDataType_t acc_dtype);

// Edge `edge` of the window as a value.
double windowEdge(const MagnitudeWindow& w, size_t edge, scclDataType_t acc_dtype);

// A magnitude pattern of the accumulator type (float32 patterns in the low 32 bits) as a value.
double magnitudeValue(uint64_t bits, scclDataType_t acc_dtype);

// The edge at or below |value| (0 below the window, bins above it): where a threshold lies in
// the window, the centre the nearest-count choice breaks its ties toward.
size_t edgeAtOrBelow(const MagnitudeWindow& w, double value, scclDataType_t acc_dtype);

// The edge whose count at or above it (from counts of absBitHistogram's layout, bins + 1
// entries) is nearest k; ties to the edge nearest centre_edge. *at_or_above = that count.
size_t edgeNearestCount(const std::vector<uint64_t>& counts, size_t bins, uint64_t k,
                        size_t centre_edge, uint64_t* at_or_above);

}  // namespace sccl
