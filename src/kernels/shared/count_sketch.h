// The hash and sign functions of the count sketch (S2 Reducer, docs/algorithms/s2.md), shared by
// the CPU kernels, the public scclCountSketch* functions and the CUDA kernels (cuda/). Header-only,
// unsigned 64-bit arithmetic only (wrap-around is defined, there is no undefined behaviour), no
// floating point and no platform-dependent types, so every rank and every backend computes the
// same bucket and sign for the same (seed, row, index).
//
// Definitions (all arithmetic modulo 2^64):
//   mix(z)        = splitmix64's finaliser: z += 0x9E3779B97F4A7C15;
//                   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) *
//                   0x94D049BB133111EB; z ^ (z >> 31)
//   key(seed, j)  = mix(seed ^ mix(j + 1))                         one key per sketch row j
//   hash(key, i)  = mix(key ^ i)                                   a bijection of i for each key
//   bucket_j(i)   = ((hash >> 32) * width) >> 32                   in [0, width), width < 2^32
//   sign_j(i)     = +1 if (hash & 1) == 0, else -1
// The bucket takes the high 32 bits by multiply-shift (no modulo bias beyond 2^-32 per bucket),
// the sign the lowest bit: disjoint bits of a mixed word. Unlike the reference code (int64
// polynomial hashes that overflow, and a GNMT copy whose bucket is i mod c), nothing overflows
// and no row degenerates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/half.h"  // SCCL_HOST_DEVICE

namespace sccl {

// The widest sketch row the bucket function supports.
constexpr uint64_t kMaxSketchWidth = (uint64_t{1} << 32) - 1;

SCCL_HOST_DEVICE inline uint64_t sketchMix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SCCL_HOST_DEVICE inline uint64_t sketchRowKey(uint64_t seed, uint32_t row) {
  return sketchMix(seed ^ sketchMix(uint64_t(row) + 1));
}

SCCL_HOST_DEVICE inline uint64_t sketchHash(uint64_t key, uint64_t index) {
  return sketchMix(key ^ index);
}

SCCL_HOST_DEVICE inline uint64_t sketchBucket(uint64_t hash, uint64_t width) {
  return ((hash >> 32) * width) >> 32;
}

// 0 for +1, 1 for -1 (the sign bit to apply).
SCCL_HOST_DEVICE inline bool sketchNegative(uint64_t hash) {
  return (hash & 1u) != 0;
}

// The shape of one count sketch: rows x width buckets over `count` elements in blocks of
// `block` elements (the last block may be shorter). row_keys[j] = sketchRowKey(seed, j).
struct SketchShape {
  size_t count = 0;
  size_t block = 1;
  uint32_t rows = 1;
  uint64_t width = 1;
  const uint64_t* row_keys = nullptr;

  size_t blocks() const { return count == 0 ? 0 : (count - 1) / block + 1; }
};

}  // namespace sccl
