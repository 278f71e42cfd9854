// Internals of the CPU threshold selection, shared by the driver (select.cc) and the per-ISA
// block kernels (select_scalar.cc, select_avx2.cc, select_avx512.cc).
//
// Every path compares magnitudes as unsigned integers: for IEEE values of one format, clearing
// the sign bit leaves a bit pattern whose unsigned order is the numeric order of |x|, with NaN
// patterns above +inf. With the threshold rounded up to the data's own format (the smallest
// representable value >= threshold), !(|x| < threshold) is exactly abs_bits(x) >= threshold_bits,
// NaN included. That is the same predicate as a float comparison, needs no conversion of 16-bit
// data, and is trivially identical on every ISA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/cpu/isa.h"
#include "kernels/shared/magnitude_bits.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl::cpu_select {

// Elements handled per mask test by the vector kernels.
constexpr size_t kGroupElements = 64;

// How the vector kernels append the hits of a 64-element group (see emitGroup). Both styles give
// the same output; which is faster depends on how predictable the groups are.
enum class EmitStyle { Branchy, BranchFree };

// The emit style for the next block, from the fraction of elements the last block selected:
// branch-free where about 20-90 % of the 64-element groups hold a hit (the branchy loop would
// mispredict on many groups), branchy where groups are nearly all empty or all full.
inline EmitStyle nextEmitStyle(size_t selected, size_t elements) {
  bool unpredictable = selected * 256 >= elements && selected * 32 <= elements;
  return unpredictable ? EmitStyle::BranchFree : EmitStyle::Branchy;
}

// Selects the elements x[i], begin <= i < end, whose magnitude bits are >= threshold_bits:
// writes i to idx[n] and the raw element to val[n] (element_bytes wide) and returns n. idx and
// val need room for (end - begin) entries; nothing is written past that.
using BlockSelectFn = size_t (*)(const void* x, size_t begin, size_t end, uint64_t threshold_bits,
                                 EmitStyle style, int64_t* idx, void* val);

// The block kernel for an element width (2, 4 or 8 bytes) on an ISA.
BlockSelectFn blockSelectScalar(size_t element_bytes);
BlockSelectFn blockSelectAvx2(size_t element_bytes);
BlockSelectFn blockSelectAvx512(size_t element_bytes);

inline BlockSelectFn blockSelectFor(CpuIsa isa, size_t element_bytes) {
  switch (isa) {
    case CpuIsa::Avx512: return blockSelectAvx512(element_bytes);
    case CpuIsa::Avx2: return blockSelectAvx2(element_bytes);
    case CpuIsa::Scalar: break;
  }
  return blockSelectScalar(element_bytes);
}

// The smallest value of the dtype >= threshold (threshold >= 0, not NaN; +inf when above the
// largest finite value), as the bit pattern of a non-negative value of that dtype.
uint64_t thresholdBits(scclDataType_t dtype, double threshold);

// Every bit but the sign bit: the one definition the CUDA kernels use too.
using sccl::kMagnitudeMask;

// Scalar selection of [begin, end) for one element type; used by every ISA for the elements
// that do not fill a whole group.
template <typename Bits>
inline size_t selectTail(const Bits* x, size_t begin, size_t end, Bits threshold_bits, int64_t* idx,
                         Bits* val) {
  size_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    Bits bits = x[i];
    // Written unconditionally and kept only when selected: no branch to mispredict.
    idx[n] = static_cast<int64_t>(i);
    val[n] = bits;
    n += magnitudeBits(bits) >= threshold_bits;
  }
  return n;
}

// Appends the elements base + bit for every set bit of `mask`, in ascending bit order, and
// returns how many.
//
// Branchy: one loop iteration per hit. Best when groups are nearly all empty (density ~0.1 %:
// the "no hit" branch predicts well), and a mispredicted branch costs little while the loop waits
// for memory anyway. Branch-free: at ~1 % density about half the groups hold one or two hits in
// no predictable pattern; there the first two entries are written unconditionally (a write with
// no hit is overwritten later) and only a third hit, rare at such densities, takes a branch.
// Writes stay at positions n and n + 1 at most, inside the room for the group's 64 elements.
template <EmitStyle kStyle, typename Bits>
inline size_t emitGroup(const Bits* x, size_t base, uint64_t mask, int64_t* idx, Bits* val) {
  size_t n = 0;
  if constexpr (kStyle == EmitStyle::BranchFree) {
    for (int unrolled = 0; unrolled < 2; ++unrolled) {
      // Lowest set bit; bit 63 when the mask is empty (an in-bounds dummy entry).
      size_t i = base + static_cast<size_t>(__builtin_ctzll(mask | (uint64_t{1} << 63)));
      idx[n] = static_cast<int64_t>(i);
      val[n] = x[i];
      n += mask != 0;
      mask &= mask - 1;
    }
  }
  while (mask != 0) {
    size_t i = base + static_cast<size_t>(__builtin_ctzll(mask));
    idx[n] = static_cast<int64_t>(i);
    val[n] = x[i];
    ++n;
    mask &= mask - 1;
  }
  return n;
}

// How far ahead the vector kernels prefetch. The hardware prefetchers stop at 4 KiB pages, and
// the selection loop keeps fewer loads in flight than a plain read does; prefetching two pages
// ahead brought a single thread from ~70 % to the plain-read rate on the development machine.
constexpr size_t kPrefetchBytes = 8192;

// Prefetches the group that starts kPrefetchBytes after element i, if it is inside [.., end).
template <typename Bits>
inline void prefetchAhead(const Bits* x, size_t i, size_t end) {
  constexpr size_t kAheadElements = kPrefetchBytes / sizeof(Bits);
  if (i + kAheadElements >= end) return;
  const char* ahead = reinterpret_cast<const char*>(x + i + kAheadElements);
  for (size_t line = 0; line < kGroupElements * sizeof(Bits); line += 64) {
    __builtin_prefetch(ahead + line);
  }
}

}  // namespace sccl::cpu_select
