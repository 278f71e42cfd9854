// The per-element and per-block logic of the count-sketch kernels, shared by the CPU kernels
// (kernels/cpu/sketch.cc) and the CUDA kernels (cuda/kernels/sketch.cu): block bounds, the
// median over rows and the decode of one element. Hashes and signs: kernels/shared/count_sketch.h.
// Both backends call these same functions, so a decode is bitwise identical on both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/count_sketch.h"
#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/host_device.h"

namespace sccl {

// The most rows a decode's on-stack scratch holds (callers allow far fewer).
constexpr uint32_t kMaxSketchRows = 64;

// Blocks are [b * block, min((b + 1) * block, count)): the last one may be shorter.
SCCL_HOST_DEVICE inline size_t sketchBlockCount(size_t count, size_t block) {
  return count == 0 ? 0 : (count - 1) / block + 1;
}

SCCL_HOST_DEVICE inline size_t sketchBlockEnd(size_t b, size_t block, size_t count) {
  const size_t end = (b + 1) * block;
  return end < count ? end : count;
}

SCCL_HOST_DEVICE inline bool sketchBlockMarked(const uint8_t* bitmap, size_t b) {
  return bitmap == nullptr || bitmap[b] != 0;
}

// Median of n values (n small), in place: insertion sort, then the middle one or the mean of
// the middle two.
template <typename T>
SCCL_HOST_DEVICE inline T sketchMedian(T* v, uint32_t n) {
  for (uint32_t a = 1; a < n; ++a) {
    T key = v[a];
    uint32_t b = a;
    while (b > 0 && v[b - 1] > key) {
      v[b] = v[b - 1];
      --b;
    }
    v[b] = key;
  }
  if (n % 2 == 1) return v[n / 2];
  return (v[n / 2 - 1] + v[n / 2]) / T(2);
}

// Where row j of the table holds element i's bucket (its position in the rows x width table),
// and whether the row's sign negates it.
SCCL_HOST_DEVICE inline size_t sketchTableEntry(const uint64_t* row_keys, uint32_t j,
                                                uint64_t width, size_t i, bool* negative) {
  const uint64_t h = sketchHash(row_keys[j], i);
  *negative = sketchNegative(h);
  return size_t(j) * width + sketchBucket(h, width);
}

// An element's estimate from its rows' signed table values (rows of them, reordered in place):
// their median, divided by `divisor` unless it is 1. A NaN estimate is the canonical NaN
// (kernels/shared/canonical_nan.h): the median of two rows and the division are arithmetic, and a
// negated NaN table entry must not carry its sign into the output either.
template <typename T>
SCCL_HOST_DEVICE inline T sketchEstimate(T* signed_values, uint32_t rows, uint32_t divisor) {
  T estimate = sketchMedian(signed_values, rows);
  if (divisor != 1) estimate = estimate / T(divisor);
  return canonicalizeNaN(estimate);
}

// The decoded estimate of element i: the median over rows j of sign_j(i) * table[j][bucket_j(i)],
// divided by `divisor` unless it is 1 (sketchEstimate). rows <= kMaxSketchRows.
template <typename T>
SCCL_HOST_DEVICE inline T sketchDecodeElement(const T* table, uint32_t rows, uint64_t width,
                                              const uint64_t* row_keys, size_t i,
                                              uint32_t divisor) {
  T estimates[kMaxSketchRows];
  for (uint32_t j = 0; j < rows; ++j) {
    bool negative = false;
    const T value = table[sketchTableEntry(row_keys, j, width, i, &negative)];
    estimates[j] = negative ? -value : value;
  }
  return sketchEstimate(estimates, rows, divisor);
}

}  // namespace sccl
