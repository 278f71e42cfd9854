// In-call density correction: the count feedback of MiCRO/ExDyna's threshold scaling, taken on
// this call's data instead of the last call's.
//
// Why: threshold scaling (MiCRO Sec. IV-C, ExDyna Alg. 5) sets the threshold of call t from k'
// of call t-1, so it can only follow changes of the gradient that persist. On real training the
// mini-batch gradient's scale jumps from one step to the next (Fashion-MNIST CNN, 4 workers of
// batch 32, consecutive steps 1001-1100: k'/k at the scaled threshold swings between 0.45 and
// 1.75, mean |k'/k - 1| = 0.27 after 50 calls; docs/algorithms/density_correction.md), which no
// feedback from the past can remove. Counting before selecting can.
//
// Steps, on every rank, with delta the scaled threshold (identical on every rank), B bins per
// octave and a window of W octaves on each side:
//  1. Window in the bit patterns of the accumulator type (float32: 23 mantissa bits; float64:
//     52): one octave is 2^mantissa_bits consecutive patterns, a bin 2^(mantissa_bits - log2 B)
//     of them. base = bits(delta 2^-W) rounded down to a bin edge; 2 W B bins plus one bin for
//     everything above the window (inf and NaN included). Log-spaced to within the linear
//     spacing of patterns inside an octave: bin widths are 1/B of an octave's span.
//  2. Count |acc| of this rank's exclusive range into the bins and all-reduce the 2 W B + 1 uint64
//     counts (sum: exact, identical everywhere). The count is made by the pass that accumulates
//     the gradient (KernelBackend::accumulateSelect, histogram of absBitHistogram's definition)
//     from the floor edge up (a quarter octave below delta), and that pass keeps every entry
//     there as a candidate, so step 3's threshold selects from the candidates without reading
//     the range again. When all ranks together hold fewer than k entries from the floor edge up,
//     the edge nearest k may lie lower: every rank then counts the whole window over its range
//     and the counts are all-reduced once more (the result is the same as counting it all at
//     first; it costs a pass and an all-reduce on such calls).
//  3. C(j) = entries of all ranks at or above edge j. Pick the edge whose C(j) is nearest k;
//     among edges with the same C (empty bins) the one nearest delta, so the threshold does not
//     wander. The edge read back as a value is the threshold: selectAbove at it selects exactly
//     the entries counted at or above it, so k' = C(j) is known before selecting.
//  4. The estimator adopts the threshold (so the next window is centred on it) and then observes
//     k' as usual: if k lay outside the window, the scaling rule moves delta on toward it.
// Cost: no pass of its own on the CPU (the fused pass bins the candidates only; a separate
// histogram pass cost 4x its memory time at 26M float32, binning being compute-bound), the
// candidates' staging (12 bytes each: about 2x k at density 0.01 on a Laplace tail, 3x at 0.001),
// and one all-reduce of 8 (2 W B + 1) bytes (4104 bytes with the defaults W = 1, B = 256); bytes on
// the wire 2 (n-1)/n 8 (2 W B + 1) each way. Accuracy: k' differs from k by at most half the global
// count of the bin at the target, about k ln(1/density) ln(2)/B / 2 for an exponential tail (0.6 %
// of k at density 0.01 with B = 256) as long as the target lies inside the window. Not in the
// papers or their code: this is sparsecoll's; "none" gives the papers' behaviour.
#include "algorithms/density_correction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "algorithms/exchange_accounting.h"
#include "algorithms/threshold_query.h"
#include "core/error.h"
#include "algorithms/reduction_context.h"

namespace sccl {

CorrectionWindow correctionWindow(const ReductionContext& ctx) {
  const double delta = ctx.estimator.currentThreshold();
  CorrectionWindow w;
  static_cast<MagnitudeWindow&>(w) =
      magnitudeWindowAround(delta, ctx.acc_dtype, ctx.config.correction_bins_per_octave,
                            ctx.config.correction_octaves * ctx.config.correction_bins_per_octave,
                            ctx.config.correction_octaves * ctx.config.correction_bins_per_octave);
  // A quarter octave below delta (2^-1/4), on a bin edge: at most delta's own edge (the centre),
  // which the choice of step 3 relies on.
  const uint64_t floor_bits = magnitudeBits(delta * 0.8408964152537145, ctx.acc_dtype);
  w.floor_edge = floor_bits <= w.base ? 0 : size_t((floor_bits - w.base) >> w.shift);
  if (w.floor_edge >= w.bins) w.floor_edge = 0;  // a window clamped at +inf: count all of it
  return w;
}

scclResult_t correctFromCounts(SparseCall& call, const CorrectionWindow& w,
                               std::vector<uint64_t>& counts, size_t counted_from,
                               double* threshold, uint64_t* predicted_k, bool* decided) {
  const ReductionContext& ctx = *call.ctx;
  const double delta = ctx.estimator.currentThreshold();
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allReduce(counts.data(), counts.data(), counts.size(), scclUint64, ReduceOp::Sum);
  }));
  countAllReduce(call, counts.size() * sizeof(uint64_t));
  *decided = false;
  if (counted_from > 0) {
    uint64_t from_floor = 0;
    for (size_t j = counted_from; j <= w.bins; ++j) from_floor += counts[j];
    if (from_floor < ctx.k_target) return scclSuccess;  // the edge may lie lower: count it all
  }
  *decided = true;
  const size_t centre_edge = edgeAtOrBelow(w, delta, ctx.acc_dtype);
  // Step 3: the edge whose global count is nearest k; ties to the edge nearest the centre.
  const size_t edge = edgeNearestCount(counts, w.bins, ctx.k_target, centre_edge, predicted_k);
  *threshold = windowEdge(w, edge, ctx.acc_dtype);
  ctx.estimator.adoptThreshold(*threshold);
  return scclSuccess;
}

}  // namespace sccl
