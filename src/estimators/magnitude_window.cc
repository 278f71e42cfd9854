// Magnitude windows and the nearest-count edge (magnitude_window.h). Non-negative IEEE values
// order like their bit patterns read as unsigned integers, so equal steps of the pattern are
// bins of equal relative width inside an octave: 2^(mantissa bits - log2 B) patterns per bin.
#include "estimators/magnitude_window.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>

#include "kernels/shared/gather_plan.h"

namespace sccl {

uint64_t magnitudeBits(double value, scclDataType_t acc_dtype) {
  if (acc_dtype == scclFloat64) return std::bit_cast<uint64_t>(std::fabs(value));
  const float narrowed = float(std::min(std::fabs(value), double(FLT_MAX)));
  return std::bit_cast<uint32_t>(narrowed);
}

double magnitudeValue(uint64_t bits, scclDataType_t acc_dtype) {
  if (acc_dtype == scclFloat64) return std::bit_cast<double>(bits);
  return double(std::bit_cast<float>(static_cast<uint32_t>(bits)));
}

double windowEdge(const MagnitudeWindow& w, size_t edge, scclDataType_t acc_dtype) {
  return magnitudeValue(w.base + (uint64_t(edge) << w.shift), acc_dtype);
}

size_t edgeAtOrBelow(const MagnitudeWindow& w, double value, scclDataType_t acc_dtype) {
  const uint64_t bits = magnitudeBits(value, acc_dtype);
  return bits <= w.base ? 0 : std::min<size_t>(w.bins, size_t((bits - w.base) >> w.shift));
}

MagnitudeWindow magnitudeWindowAround(double centre, scclDataType_t acc_dtype, int bins_per_octave,
                                      int bins_below, int bins_above) {
  const unsigned mantissa_bits = acc_dtype == scclFloat64 ? 52 : 23;
  const uint64_t infinity_bits =
      acc_dtype == scclFloat64 ? 0x7ff0000000000000ull : uint64_t{0x7f800000};
  MagnitudeWindow w;
  w.shift = mantissa_bits - unsigned(std::countr_zero(unsigned(bins_per_octave)));
  w.bins = size_t(bins_below) + size_t(bins_above);
  const uint64_t octave = uint64_t{1} << mantissa_bits;
  const uint64_t span = uint64_t(w.bins) << w.shift;
  const uint64_t centre_bits = magnitudeBits(centre, acc_dtype);
  const uint64_t below = uint64_t(bins_below) * (octave / uint64_t(bins_per_octave));
  uint64_t base = centre_bits > below ? centre_bits - below : 0;
  // The top edge may reach +inf's pattern but not beyond (NaN patterns are not values).
  base = std::min(base, infinity_bits - span);
  w.base = base >> w.shift << w.shift;
  return w;
}

size_t edgeNearestCount(const std::vector<uint64_t>& counts, size_t bins, uint64_t k,
                        size_t centre_edge, uint64_t* at_or_above) {
  return nearestCountEdge([&](size_t j) { return counts[j]; }, bins, k, centre_edge, at_or_above);
}

}  // namespace sccl
