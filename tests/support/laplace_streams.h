// Synthetic gradients for density-control tests: independent Laplace values per (seed, rank,
// call), reproducible on every run, and the Laplace scale whose exact top-density threshold
// starts near the estimators' default initial threshold.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace sccl_test {

inline uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Independent Laplace(0, b) values for (seed, rank, call), one splitmix64 and one log each.
inline void fillLaplace(uint64_t seed, int rank, uint64_t t, float* grad, size_t count, float b) {
  const uint64_t base = splitmix(seed * 0x100000001B3ull ^ (uint64_t(rank) << 48) ^ (t << 20));
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = splitmix(base + i);
    const float u = (float(h >> 40) + 0.5f) * (1.0f / 16777216.0f);  // (0, 1)
    const float magnitude = -std::log(u) * b;
    grad[i] = (h & 1) ? magnitude : -magnitude;
  }
}

// The Laplace scale whose exact top-(density) threshold, b ln(1/density), is 10 % above the
// estimators' default initial threshold 1/(2 sqrt(k)): the stream starts near the target, as a
// stream whose scale the reference's delta_0 was chosen for.
inline double laplaceScaleFor(size_t count, double density) {
  const double k = std::floor(density * double(count));
  return 1.1 / (2 * std::sqrt(k)) / std::log(1 / density);
}

}  // namespace sccl_test
