// SIDCo's count check decided in the kernels' memory (estimators/sidco_multistage.cc, step 4),
// compiled for the host and the device: the CPU backend runs decideCountCheck directly, the CUDA
// backend in a one-thread kernel (cuda/kernels/histogram.cu), so both pick the same edge.
//
// On host memory the check reads its window's counts back and picks the edge nearest k there.
// On device buffers the union call reads a plan back after the selection anyway, so the edge is
// picked on the device instead and the selection reads the threshold from a device word
// (KernelBackend::selectAboveCountedAt); the threshold comes back to the host in that plan. The
// check's second, wider window runs only when the first held fewer than k entries: its histogram
// and its decision read the first window's kCheckDecided word and do nothing when it is set.
// The rule is the host's: the edge nearest k (ties to the edge nearest the fitted threshold's),
// then clamped to [the range's smallest non-zero |x|, its largest |x|], all on the accumulator
// type's magnitude patterns, whose unsigned order is the order of the values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/gather_plan.h"
#include "kernels/shared/host_device.h"

namespace sccl {

// One window of the check: absBitHistogram's window (base pattern, 2^shift patterns a bin,
// `bins` bins and the count above them), the target, the fitted threshold's edge and the clamp.
struct CountCheckWindow {
  uint64_t base_bits = 0;
  unsigned shift = 0;
  size_t bins = 0;
  uint64_t k = 0;
  size_t centre_edge = 0;           // ties go toward the edge of the fitted threshold
  uint64_t lo_bits = 0;             // the clamp: the range's smallest non-zero magnitude
  uint64_t hi_bits = ~uint64_t{0};  // its largest magnitude
  // The second, wider window: it runs only when the first left kCheckDecided 0, and decides.
  bool wide = false;
};

// The check's words in the kernels' memory.
enum CountCheckWord : size_t {
  kCheckDecided = 0,  // 1 once a window decided (the first holds at least k, or the wide one ran)
  kCheckCount = 1,    // entries of the range at or above the chosen edge (before the clamp)
  kCheckWidened = 2,  // 1 when the wide window ran
  kCheckWords = 3,
};

// Whether a window's kernels run: the first always, the wide one when the first did not decide.
SCCL_HOST_DEVICE inline bool countCheckRuns(const CountCheckWindow& w, const uint64_t* check) {
  return !w.wide || check[kCheckDecided] == 0;
}

// From the window's counts (bins + 1 of them, absBitHistogram's layout): the check's words and
// *threshold_bits = the chosen edge's pattern, clamped.
SCCL_HOST_DEVICE inline void decideCountCheck(const uint64_t* counts, const CountCheckWindow& w,
                                              uint64_t* check, uint64_t* threshold_bits) {
  uint64_t at_or_above = 0, in_window = 0;
  const size_t edge = nearestCountEdge([counts](size_t j) { return counts[j]; }, w.bins, w.k,
                                       w.centre_edge, &at_or_above);
  for (size_t j = 0; j <= w.bins; ++j) in_window += counts[j];
  uint64_t bits = w.base_bits + (uint64_t(edge) << w.shift);
  if (bits < w.lo_bits) {
    bits = w.lo_bits;
  } else if (w.hi_bits < bits) {
    bits = w.hi_bits;
  }
  *threshold_bits = bits;
  check[kCheckCount] = at_or_above;
  check[kCheckWidened] = w.wide ? 1 : 0;
  check[kCheckDecided] = (w.wide || in_window >= w.k) ? 1 : 0;
}

}  // namespace sccl
