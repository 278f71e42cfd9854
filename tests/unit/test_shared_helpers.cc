// The host/device helpers of src/kernels/shared/ and kernels/shared/half.h, compiled here by g++,
// checked over every 16-bit pattern: a GPU is never needed to find a wrong mask or conversion (the
// first GPU run found magnitudeBits<uint16_t> keeping the sign bit, which no CPU test exercised).
// Each check compares against a reference computed another way (in double, from the value), and
// reports the first failing pattern only.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/shared/half.h"
#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/magnitude_bits.h"

namespace {

using sccl::bf16ToFloat;
using sccl::fp16ToFloat;

struct Half16 {
  scclDataType_t dtype;
  const char* name;
  float (*toFloat)(uint16_t);
};

const Half16 kHalfTypes[] = {{scclFloat16, "float16", fp16ToFloat},
                             {scclBfloat16, "bfloat16", bf16ToFloat}};

std::string hex16(uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04x", bits);
  return text;
}

// Thresholds around the interesting places of both formats: zero, subnormals, 1, the largest
// finite values, beyond them, and values that fall between two representable ones.
std::vector<double> probeThresholds() {
  return {0.0,     -0.0,    5.9604644775390625e-8, 1e-7, 1e-30, 1e-40, 0.1,    0.5,  1.0,
          1.0009765625,     2.0, 3.14159, 1000.0,  65504.0, 65519.0, 65520.0, 1e6, 3.0e38,
          3.3895313892515355e38, 3.4e38, 1e30,     1e300};
}

}  // namespace

TEST_CASE("magnitude mask clears exactly the sign bit for every width", "[shared_helpers]") {
  CHECK(sccl::kMagnitudeMask<uint16_t> == 0x7fffu);
  CHECK(sccl::kMagnitudeMask<uint32_t> == 0x7fffffffu);
  CHECK(sccl::kMagnitudeMask<uint64_t> == 0x7fffffffffffffffull);
  uint32_t first_bad = 0x10000;
  for (uint32_t b = 0; b <= 0xffff && first_bad > 0xffff; ++b) {
    if (sccl::magnitudeBits(static_cast<uint16_t>(b)) != (b & 0x7fffu)) first_bad = b;
  }
  INFO("first pattern whose magnitude keeps the sign bit: " << hex16(first_bad));
  CHECK(first_bad > 0xffff);
  CHECK(sccl::magnitudeBits(uint32_t{0xbf800000u}) == 0x3f800000u);
  CHECK(sccl::magnitudeBits(uint64_t{0xfff8000000000001ull}) == 0x7ff8000000000001ull);
}

TEST_CASE("16-bit magnitude patterns order as |x| does, exhaustively", "[shared_helpers]") {
  for (const Half16& type : kHalfTypes) {
    INFO(type.name);
    // Every non-negative non-NaN pattern is followed by the next larger magnitude.
    uint32_t first_bad = 0;
    for (uint32_t b = 0; b < 0x7f80u && type.dtype == scclBfloat16 && first_bad == 0; ++b)
      if (!(type.toFloat(uint16_t(b)) < type.toFloat(uint16_t(b + 1)))) first_bad = b;
    for (uint32_t b = 0; b < 0x7c00u && type.dtype == scclFloat16 && first_bad == 0; ++b)
      if (!(type.toFloat(uint16_t(b)) < type.toFloat(uint16_t(b + 1)))) first_bad = b;
    INFO("first pattern not below its successor: " << hex16(first_bad));
    CHECK(first_bad == 0);
    // A negative pattern's magnitude is the positive pattern of the same |x|.
    for (uint32_t b = 0x8000; b <= 0xffff && first_bad == 0; ++b) {
      const float x = type.toFloat(uint16_t(b));
      const float m = type.toFloat(sccl::magnitudeBits(uint16_t(b)));
      if (std::isnan(x) ? !std::isnan(m) : std::fabs(x) != m || std::signbit(m)) first_bad = b;
    }
    INFO("first negative pattern whose magnitude is not |x|: " << hex16(first_bad));
    CHECK(first_bad == 0);
  }
}

TEST_CASE("16-bit selection predicate equals !(|x| < t) for every pattern", "[shared_helpers]") {
  for (const Half16& type : kHalfTypes) {
    for (double threshold : probeThresholds()) {
      INFO(type.name << " threshold " << threshold);
      const uint64_t threshold_bits = sccl::thresholdBits(type.dtype, threshold);
      REQUIRE(threshold_bits <= 0x7fffu);
      uint32_t first_bad = 0x10000, selected = 0, expected_selected = 0;
      for (uint32_t b = 0; b <= 0xffff; ++b) {
        const double x = type.toFloat(uint16_t(b));
        const bool expected = !(std::fabs(x) < std::fabs(threshold));  // NaN: selected
        const bool actual = sccl::magnitudeBits(uint16_t(b)) >= threshold_bits;
        selected += actual;
        expected_selected += expected;
        if (actual != expected && first_bad > 0xffff) first_bad = b;
      }
      INFO("selected " << selected << " of 65536, expected " << expected_selected
                       << "; first wrong pattern " << hex16(first_bad));
      CHECK(first_bad > 0xffff);
    }
  }
}

TEST_CASE("16-bit round-up gives the smallest representable value >= t, exhaustively",
          "[shared_helpers]") {
  for (const Half16& type : kHalfTypes) {
    INFO(type.name);
    const uint32_t infinity = type.dtype == scclFloat16 ? 0x7c00u : 0x7f80u;
    uint32_t first_bad = 0x10000;
    for (uint32_t b = 0; b < infinity && first_bad > 0xffff; ++b) {
      const float value = type.toFloat(uint16_t(b));
      // The value itself rounds up to its own pattern; anything just above it to the next one.
      if (sccl::thresholdBits(type.dtype, value) != b) first_bad = b;
      const float above = std::nextafter(value, std::numeric_limits<float>::infinity());
      if (sccl::thresholdBits(type.dtype, above) != b + 1) first_bad = b;
    }
    INFO("first pattern whose threshold bits are wrong: " << hex16(first_bad));
    CHECK(first_bad > 0xffff);
  }
}

TEST_CASE("16-bit conversions round-trip every pattern and keep NaN a NaN", "[shared_helpers]") {
  uint32_t first_bad = 0x10000;
  for (uint32_t b = 0; b <= 0xffff && first_bad > 0xffff; ++b) {
    const float f16 = fp16ToFloat(uint16_t(b));
    const float b16 = bf16ToFloat(uint16_t(b));
    const bool f16_ok = std::isnan(f16) ? std::isnan(fp16ToFloat(sccl::floatToFp16(f16)))
                                        : sccl::floatToFp16(f16) == b;
    const bool b16_ok = std::isnan(b16) ? std::isnan(bf16ToFloat(sccl::floatToBf16(b16)))
                                        : sccl::floatToBf16(b16) == b;
    // The widening of a gradient element quiets a NaN and leaves every other value alone.
    const uint32_t quiet = sccl::floatToBits(sccl::fp16ToFloatQuiet(uint16_t(b)));
    const bool quiet_ok = std::isnan(f16) ? (quiet & 0x00400000u) != 0
                                          : quiet == sccl::floatToBits(f16);
    if (!f16_ok || !b16_ok || !quiet_ok) first_bad = b;
  }
  INFO("first pattern that does not round-trip: " << hex16(first_bad));
  CHECK(first_bad > 0xffff);
}

TEST_CASE("canonical NaN constants are the formats' quiet_NaN patterns",
          "[shared_helpers][nan_rule]") {
  CHECK(sccl::floatToBits(std::numeric_limits<float>::quiet_NaN()) == sccl::kCanonicalNaNFloat32);
  const double quiet = std::numeric_limits<double>::quiet_NaN();
  uint64_t quiet_bits;
  std::memcpy(&quiet_bits, &quiet, 8);
  CHECK(quiet_bits == sccl::kCanonicalNaNFloat64);
  // The canonical float32 NaN narrows to the canonical 16-bit ones, and those widen back to it.
  CHECK(sccl::floatToFp16(sccl::canonicalNaNFloat32()) == sccl::kCanonicalNaNFloat16);
  CHECK(sccl::floatToBf16(sccl::canonicalNaNFloat32()) == sccl::kCanonicalNaNBfloat16);
  CHECK(sccl::floatToBits(fp16ToFloat(sccl::kCanonicalNaNFloat16)) == sccl::kCanonicalNaNFloat32);
  CHECK(sccl::floatToBits(bf16ToFloat(sccl::kCanonicalNaNBfloat16)) == sccl::kCanonicalNaNFloat32);
  double canonical64 = sccl::canonicalizeNaN(-quiet);
  uint64_t bits64;
  std::memcpy(&bits64, &canonical64, 8);
  CHECK(bits64 == sccl::kCanonicalNaNFloat64);
  CHECK(sccl::canonicalizeNaN(-0.0) == 0.0);
  CHECK(std::signbit(sccl::canonicalizeNaN(-0.0)));
}

TEST_CASE("canonicalizeNaN maps every float32 NaN to one pattern and leaves the rest",
          "[shared_helpers][nan_rule]") {
  uint32_t first_bad = 0, bad = 0;
  auto check = [&](uint32_t bits) {
    const bool is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
    const uint32_t got = sccl::floatToBits(sccl::canonicalizeNaN(sccl::bitsToFloat(bits)));
    if (got != (is_nan ? sccl::kCanonicalNaNFloat32 : bits) && bad++ == 0) first_bad = bits;
  };
  // Every pattern with the exponent all ones (both infinities, every quiet and signalling NaN of
  // either sign), then a stride over all patterns (zeros, subnormals, normals).
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t mantissa = 0; mantissa <= 0x7fffffu; ++mantissa)
      check(sign | 0x7f800000u | mantissa);
  }
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4099) check(uint32_t(b));
  INFO(bad << " wrong patterns, the first " << first_bad);
  CHECK(bad == 0);
}

TEST_CASE("16-bit results computed in float32 narrow to the canonical 16-bit NaN, exhaustively",
          "[shared_helpers][nan_rule]") {
  // The path of every 16-bit arithmetic result (the transports' combine, the average's division,
  // the scaled scatter and the decode into float16/bfloat16): widen, compute in float32,
  // canonicalize, narrow. Here the computation is the identity: every NaN pattern must come out
  // as the canonical 16-bit NaN and every other pattern unchanged.
  for (const Half16& type : kHalfTypes) {
    const uint16_t canonical =
        type.dtype == scclFloat16 ? sccl::kCanonicalNaNFloat16 : sccl::kCanonicalNaNBfloat16;
    uint32_t first_bad = 0x10000, nans = 0;
    for (uint32_t b = 0; b <= 0xffff; ++b) {
      const float wide = sccl::canonicalizeNaN(type.toFloat(uint16_t(b)));
      const uint16_t narrow =
          type.dtype == scclFloat16 ? sccl::floatToFp16(wide) : sccl::floatToBf16(wide);
      const bool is_nan = std::isnan(type.toFloat(uint16_t(b)));
      nans += is_nan;
      if (narrow != (is_nan ? canonical : b) && first_bad > 0xffff) first_bad = b;
    }
    INFO(type.name << ": " << nans << " NaN patterns; first wrong pattern " << hex16(first_bad));
    CHECK(nans == 2 * (type.dtype == scclFloat16 ? 0x3ffu : 0x7fu));
    CHECK(first_bad > 0xffff);
  }
}
