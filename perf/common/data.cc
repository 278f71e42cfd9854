// Counter-based generator (splitmix64 of seed and index) and dtype conversions for perf inputs.
// The half-precision conversions are the library's header-only ones (kernels/shared/half.h), so
// inputs are rounded exactly as the library rounds.
#include "data.h"

#include <cmath>

#include "kernels/shared/half.h"

namespace sccl_perf {

uint64_t splitmix(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void storeValue(void* buf, scclDataType_t dtype, size_t i, double value) {
  switch (dtype) {
    case scclFloat64: static_cast<double*>(buf)[i] = value; break;
    case scclFloat32: static_cast<float*>(buf)[i] = static_cast<float>(value); break;
    case scclFloat16:
      static_cast<uint16_t*>(buf)[i] = sccl::floatToFp16(static_cast<float>(value));
      break;
    case scclBfloat16:
      static_cast<uint16_t*>(buf)[i] = sccl::floatToBf16(static_cast<float>(value));
      break;
    default: break;
  }
}

double laplaceValue(uint64_t seed, uint64_t index) {
  uint64_t r = splitmix(seed, index);
  double u = static_cast<double>((r >> 11) | 1) * 0x1.0p-53;  // (0, 1), never 0
  return (r & 1 ? -1.0 : 1.0) * -std::log(u);
}

void fillLaplace(ThreadTeam& team, void* buf, scclDataType_t dtype, size_t count, uint64_t seed,
                 uint64_t first_index, double scale) {
  team.run([&](int thread, int nthreads) {
    size_t begin = count * thread / nthreads, end = count * (thread + 1) / nthreads;
    for (size_t i = begin; i < end; ++i) {
      storeValue(buf, dtype, i, scale * laplaceValue(seed, first_index + i));
    }
  });
}

double loadAsDouble(const void* buf, scclDataType_t dtype, size_t i) {
  switch (dtype) {
    case scclFloat64: return static_cast<const double*>(buf)[i];
    case scclFloat32: return static_cast<const float*>(buf)[i];
    case scclFloat16: return sccl::fp16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case scclBfloat16: return sccl::bf16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    default: return 0;
  }
}

}  // namespace sccl_perf
