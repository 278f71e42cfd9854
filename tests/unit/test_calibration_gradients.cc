// The calibration's gradients (src/tuning/calibration_gradients.h): the second is a permutation
// of the first for every count (so both have the same magnitudes, which is what the calibrated
// work depends on), in another order, deterministic, and Laplace-shaped; no dtype writes past its
// elements.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/dtype.h"
#include "tuning/calibration_gradients.h"

namespace {

// The elements of bytes (size <= 8 bytes each), each as the integer of its bytes, sorted.
std::vector<uint64_t> sortedElements(const std::vector<unsigned char>& bytes, size_t size) {
  std::vector<uint64_t> elements;
  for (size_t at = 0; at + size <= bytes.size(); at += size) {
    uint64_t element = 0;
    std::memcpy(&element, bytes.data() + at, size);
    elements.push_back(element);
  }
  std::sort(elements.begin(), elements.end());
  return elements;
}

}  // namespace

TEST_CASE("the permutation stride is coprime with every count", "[tuning][calibration]") {
  for (uint64_t count : {1ull, 2ull, 3ull, 4ull, 5ull, 6ull, 10ull, 12ull, 30ull, 210ull, 2310ull,
                         4096ull, 30030ull, 65536ull, 65535ull, 510510ull}) {
    const uint64_t stride = sccl::permutationStride(count);
    INFO("count " << count << " stride " << stride);
    CHECK(std::gcd(stride, count) == 1);
    CHECK(stride >= 1);
    if (count > 2) CHECK(stride < count);
  }
}

TEST_CASE("the second calibration gradient permutes the first", "[tuning][calibration]") {
  const scclDataType_t dtypes[] = {scclFloat32, scclFloat64, scclFloat16, scclBfloat16,
                                   scclInt8,    scclInt32,   scclUint64};
  for (scclDataType_t dtype : dtypes) {
    for (uint64_t count : {1ull, 2ull, 7ull, 30030ull, 65536ull}) {
      const size_t size = sccl::dataTypeSize(dtype);
      // Filled beforehand: the draw must size both to count elements exactly.
      std::vector<unsigned char> first(3, 0xAB), second(count * size + 9, 0xCD);
      sccl::drawCalibrationGradients(1, dtype, 0.01, count, &first, &second);
      INFO("dtype " << int(dtype) << " count " << count);
      REQUIRE(first.size() == count * size);
      REQUIRE(second.size() == count * size);
      CHECK(sortedElements(first, size) == sortedElements(second, size));
      if (count > 2 && (dtype == scclFloat32 || dtype == scclFloat64))
        CHECK(std::memcmp(first.data(), second.data(), first.size()) != 0);
      std::vector<unsigned char> again_first, again_second;
      sccl::drawCalibrationGradients(1, dtype, 0.01, count, &again_first, &again_second);
      CHECK(again_first == first);
      CHECK(again_second == second);
    }
  }
}

TEST_CASE("calibration gradients are Laplace(0, scale) values", "[tuning][calibration]") {
  const uint64_t count = 65536;
  const double scale = 0.25;
  std::vector<unsigned char> first, second;
  sccl::drawCalibrationGradients(3, scclFloat32, scale, count, &first, &second);
  std::vector<float> values(count);
  std::memcpy(values.data(), first.data(), first.size());
  double sum = 0, sum_abs = 0;
  size_t beyond_three_scales = 0, positive = 0, not_finite = 0;
  for (float v : values) {
    not_finite += std::isfinite(v) ? 0 : 1;
    sum += v;
    sum_abs += std::fabs(v);
    beyond_three_scales += std::fabs(v) > 3 * scale ? 1 : 0;
    positive += v > 0 ? 1 : 0;
  }
  REQUIRE(not_finite == 0);
  // Laplace(0, b): E|x| = b, P(|x| > 3b) = e^-3 = 0.0498; bounds at several standard errors.
  CHECK(std::fabs(sum / count) < 0.01 * scale);
  CHECK(sum_abs / count == Approx(scale).epsilon(0.02));
  CHECK(double(beyond_three_scales) / count == Approx(std::exp(-3.0)).epsilon(0.06));
  CHECK(double(positive) / count == Approx(0.5).epsilon(0.02));
}
