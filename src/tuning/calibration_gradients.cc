#include "tuning/calibration_gradients.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/dtype.h"
#include "kernels/shared/count_sketch.h"  // sketchMix
#include "kernels/shared/half.h"

namespace sccl {
namespace {

// Laplace(0, scale) values of stream `seed`, written in dtype over bytes (count elements).
// Float logarithms: half the cost of double ones, and a 24-bit uniform still reaches 16.6 scales
// into the tail, beyond the largest of 64K draws (about ln 64K = 11 scales).
void drawLaplace(uint64_t seed, scclDataType_t dtype, double scale,
                 std::vector<unsigned char>* bytes) {
  const size_t size = dataTypeSize(dtype);
  const uint64_t count = bytes->size() / size;
  const float float_scale = float(scale);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = sketchMix(seed * 0x100000001B3ull + i);  // splitmix64's finaliser
    const float u = (float(h >> 40) + 0.5f) * 0x1p-24f;
    const float magnitude = -float_scale * std::log(u);
    const float value = (h & 1) ? magnitude : -magnitude;
    unsigned char* out = bytes->data() + i * size;
    if (dtype == scclFloat64) {
      const double wide = value;
      std::memcpy(out, &wide, 8);
    } else if (dtype == scclFloat16 || dtype == scclBfloat16) {
      const uint16_t half = dtype == scclFloat16 ? floatToFp16(value) : floatToBf16(value);
      std::memcpy(out, &half, 2);
    } else if (dtype == scclFloat32) {
      std::memcpy(out, &value, 4);
    } else {
      // Integer data (a dense config may take it): any values cost the same; one per element,
      // in the element's own size.
      const int64_t whole = int64_t(value);
      std::memcpy(out, &whole, std::min<size_t>(size, 8));
    }
  }
}

}  // namespace

uint64_t permutationStride(uint64_t count) {
  if (count <= 2) return 1;
  uint64_t stride = std::max<uint64_t>(1, uint64_t(0.6180339887 * double(count)));
  while (std::gcd(stride, count) != 1) ++stride;  // ends: count - 1 is coprime with count
  return stride;
}

void drawCalibrationGradients(uint64_t seed, scclDataType_t dtype, double scale, uint64_t count,
                              std::vector<unsigned char>* first,
                              std::vector<unsigned char>* second) {
  const size_t size = dataTypeSize(dtype);
  first->resize(count * size);
  second->resize(count * size);
  drawLaplace(seed, dtype, scale, first);
  const uint64_t stride = permutationStride(count);
  uint64_t from = 0;  // i * stride mod count, kept without the product's overflow
  for (uint64_t i = 0; i < count; ++i) {
    std::memcpy(second->data() + i * size, first->data() + from * size, size);
    from += stride;
    if (from >= count) from -= count;
  }
}

}  // namespace sccl
