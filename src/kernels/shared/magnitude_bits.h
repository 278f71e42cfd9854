// Threshold selection as an integer comparison, shared by the CPU kernels (kernels/cpu/select.*)
// and the CUDA kernels (cuda/kernels/select.cu) so that both select exactly the same elements.
//
// For IEEE values of one format, clearing the sign bit leaves a bit pattern whose unsigned order
// is the numeric order of |x|, with NaN patterns above +inf. With the threshold rounded up to the
// data's own format (the smallest representable value >= threshold), !(|x| < threshold) is
// exactly magnitude_bits(x) >= threshold_bits, NaN included: no conversion of 16-bit data, and
// nothing that a compiler or a GPU could round differently.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/shared/half.h"
#include "kernels/shared/host_device.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Smallest float >= threshold (threshold >= 0, not NaN). Stepping a non-negative float's bit
// pattern by one moves to the next larger value, which is nextafter(r, +inf) without libm.
SCCL_HOST_DEVICE inline float roundUpToFloat(double threshold) {
  if (threshold > 3.4028234663852886e38) return bitsToFloat(0x7f800000u);  // above FLT_MAX: +inf
  float rounded = static_cast<float>(threshold);
  if (static_cast<double>(rounded) < threshold) rounded = bitsToFloat(floatToBits(rounded) + 1u);
  return rounded;
}

// Smallest float16 / bfloat16 pattern >= value, given the format's round-to-nearest conversion.
// Stepping the bit pattern by one moves to the next larger magnitude (0x7bff + 1 is fp16 +inf).
SCCL_HOST_DEVICE inline uint16_t roundUpToFp16(float value) {
  uint16_t bits = floatToFp16(value);
  if (fp16ToFloat(bits) < value) ++bits;
  return bits;
}

SCCL_HOST_DEVICE inline uint16_t roundUpToBf16(float value) {
  uint16_t bits = floatToBf16(value);
  if (bf16ToFloat(bits) < value) ++bits;
  return bits;
}

// The smallest value of the dtype >= threshold (threshold >= 0, not NaN; +inf when above the
// largest finite value), as the bit pattern of a non-negative value of that dtype.
SCCL_HOST_DEVICE inline uint64_t thresholdBits(scclDataType_t dtype, double threshold) {
  threshold += 0.0;  // -0.0 becomes +0.0, whose pattern is the smallest magnitude
  switch (dtype) {
    case scclFloat64: {
      uint64_t bits;
      std::memcpy(&bits, &threshold, sizeof(bits));
      return bits;
    }
    case scclFloat32: return floatToBits(roundUpToFloat(threshold));
    case scclFloat16: return roundUpToFp16(roundUpToFloat(threshold));
    case scclBfloat16: return roundUpToBf16(roundUpToFloat(threshold));
    default: break;
  }
  return 0;
}

// Every bit but the sign bit of an element of this width (Bits = uint16_t, uint32_t, uint64_t).
// The cast before the shift matters: for a 16-bit type `~Bits{0}` is promoted to the int -1, and
// `-1 >> 1` is still -1, which would keep the sign bit (the first GPU run selected every negative
// float16/bfloat16 element that way). The CPU kernels use this same constant, so their tests cover
// it, and tests/unit/test_shared_helpers.cc checks it exhaustively for 16-bit patterns.
template <typename Bits>
inline constexpr Bits kMagnitudeMask = static_cast<Bits>(static_cast<Bits>(~Bits{0}) >> 1);

static_assert(kMagnitudeMask<uint16_t> == 0x7fffu, "16-bit magnitude mask");
static_assert(kMagnitudeMask<uint32_t> == 0x7fffffffu, "32-bit magnitude mask");
static_assert(kMagnitudeMask<uint64_t> == 0x7fffffffffffffffull, "64-bit magnitude mask");

// |x| as an unsigned pattern of the element's own width.
template <typename Bits>
SCCL_HOST_DEVICE inline Bits magnitudeBits(Bits bits) {
  return static_cast<Bits>(bits & kMagnitudeMask<Bits>);
}

}  // namespace sccl
