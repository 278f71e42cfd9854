// accumulateAndSelect: see gather_selection.h.
//
// A call must read the gradient and the residual and write the new residual; this file makes
// everything else small. The pass that accumulates (KernelBackend::accumulateSelect) also does
// what the threshold allows before the data is known:
//  - density correction (micro, exdyna): the pass counts the window of the correction and keeps
//    every entry at or above its floor (edge 0) as a candidate, with its value; after the bin
//    all-reduce, the corrected threshold (an edge) selects among the candidates alone, exactly
//    the entries selectAbove would find in the range (the edges split the bit patterns the same
//    way). On device buffers the pass only counts (the candidates would cross to the host) and
//    the range is selected again on the device at the corrected threshold.
//  - a threshold known before the data (scaling without correction, fixed): the pass selects at
//    it, and that is the selection.
//  - an estimator that fits this call's data (top-k, SIDCo, DGC, RedSync, GaussianK): the
//    estimator reads the range; on host buffers the pass keeps every entry at or above a quarter
//    octave below the last call's threshold, which hold the selection when this call's threshold
//    is at or above that floor (top-k finds its k-th value among them when at least k qualify),
//    else the range is selected (candidateFloor).
// The candidates' buffer holds about what the last call needed; when more qualify the pass still
// counts them exactly and the range is selected again at the threshold (correct, one more pass),
// and the buffer grows for the next call.
// Then the trims of step 1 (exact top-k, max_density_slack) on the selected values.
#include "algorithms/gather_selection.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/exchange_accounting.h"
#include "algorithms/density_correction.h"
#include "kernels/device_staging.h"
#include "algorithms/selection_trim.h"
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/error.h"
#include "algorithms/reduction_context.h"
#include "kernels/kernels.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl {

size_t likelySelection(const ReductionContext& ctx, IndexRange range, uint64_t k_local) {
  return std::min<size_t>(range.size(),
                          std::max<size_t>({4096, 2 * k_local, 2 * ctx.last_k_local}));
}

size_t candidateRoom(IndexRange range, size_t wanted) {
  return std::min<size_t>(range.size(), std::max<size_t>(4096, std::min(wanted, range.size() / 4)));
}

constexpr double kQuarterOctaveBelow = 0.8408964152537145;  // 2^(-1/4)

bool candidateFloor(const ReductionContext& ctx, double* floor) {
  const double last = ctx.estimator.currentThreshold();
  if (!(last > 0) || !std::isfinite(last)) return false;
  *floor = last * kQuarterOctaveBelow;
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// selectAbove over the range at `threshold` into ctx.local_indices (through the staging on device
// buffers), with `room` entries first and the exact count on overflow. *idx is the kernels'
// array of the indices.
scclResult_t selectRange(SparseCall& call, IndexRange range, double threshold, size_t room,
                         size_t* n, int64_t** idx) {
  const ReductionContext& ctx = *call.ctx;
  auto select = [&](size_t capacity) -> scclResult_t {
    if (ctx.local_indices.size() < capacity) ctx.local_indices.resize(capacity);
    void* array = nullptr;
    SCCL_CHECK(stagedArray(call.device, DeviceStaging::kLocalIndices, ctx.local_indices.data(),
                           capacity * sizeof(int64_t), false, &array));
    *idx = static_cast<int64_t*>(array);
    return callKernels(call).selectAbove(call.acc, ctx.acc_dtype, range.begin, range.end, threshold,
                                         *idx, nullptr, capacity, n, call.stream);
  };
  SCCL_CHECK(select(std::max(room, ctx.local_indices.size())));
  if (*n > ctx.local_indices.size()) SCCL_CHECK(select(*n));
  return unstageArray(call.device, ctx.local_indices.data(), *idx, *n * sizeof(int64_t));
}

// The candidates at or above `threshold`, compacted into ctx.local_indices and ctx.values (host).
template <typename Bits>
size_t keepAtOrAbove(const ReductionContext& ctx, size_t ncandidates, double threshold) {
  const Bits bits = static_cast<Bits>(thresholdBits(ctx.acc_dtype, threshold));
  if (ctx.local_indices.size() < ncandidates) ctx.local_indices.resize(ncandidates);
  ctx.values.resize(std::max<size_t>(1, ncandidates) * sizeof(Bits));
  const auto* values = reinterpret_cast<const Bits*>(ctx.candidate_values.data());
  auto* kept_values = reinterpret_cast<Bits*>(ctx.values.data());
  size_t n = 0;
  for (size_t j = 0; j < ncandidates; ++j) {
    // Written unconditionally and kept only when selected: no branch to mispredict.
    ctx.local_indices[n] = ctx.candidate_indices[j];
    kept_values[n] = values[j];
    n += magnitudeBits(values[j]) >= bits;
  }
  return n;
}

// The trims of step 1: exact top-k (ties at the k-th value by lowest index) and
// max_density_slack (at most ceil(k/n (1 + slack)) entries, the largest). They read the selected
// values aligned with the indices on the host: ctx.values when `values_ready`, else gathered from
// acc at idx (the kernels' array).
scclResult_t trimLocal(SparseCall& call, uint64_t k_target_local, const int64_t* idx,
                       bool values_ready, size_t* selected) {
  const ReductionContext& ctx = *call.ctx;
  size_t n = *selected;
  const size_t cap = std::min<uint64_t>(
      n, densitySlackCap(ctx.k_target, ctx.comm->nranks, ctx.config.max_density_slack, ctx.count));
  const bool exact = ctx.estimator.exactCount() && n > k_target_local;
  if (!exact && n <= cap) return scclSuccess;
  const size_t element = accElementSize(ctx);
  if (!values_ready) {
    ctx.values.resize(n * element);
    void* values = nullptr;
    SCCL_CHECK(stagedArray(call.device, DeviceStaging::kValues, ctx.values.data(), n * element,
                           false, &values));
    SCCL_CHECK(callKernels(call).gather(call.acc, ctx.acc_dtype, idx, n, values, call.stream));
    SCCL_CHECK(unstageArray(call.device, ctx.values.data(), values, n * element));
  }
  if (exact) {
    n = trimAlignedSelection(ctx.values.data(), ctx.acc_dtype, ctx.local_indices.data(), n,
                             k_target_local, call.threshold);
  }
  if (n > cap) {
    double cutoff = 0;
    SCCL_CHECK(
        cpuKernels().kthLargestAbs(ctx.values.data(), ctx.acc_dtype, 0, n, cap, &cutoff, nullptr));
    n = trimAlignedSelection(ctx.values.data(), ctx.acc_dtype, ctx.local_indices.data(), n, cap,
                             cutoff);
  }
  *selected = n;
  return scclSuccess;
}

// A quarter octave: the candidates' floor below the last call's threshold, as the density
// correction's floor edge lies below its threshold.

// The whole window of the correction over this rank's range, into *counts (bins + 1; zeros for
// a rank that does not select), for the rare call whose threshold lies below the floor edge.
scclResult_t countWholeWindow(SparseCall& call, IndexRange range, bool selects,
                              const CorrectionWindow& w, std::vector<uint64_t>* counts) {
  const ReductionContext& ctx = *call.ctx;
  counts->assign(w.bins + 1, 0);
  if (!selects) return scclSuccess;
  const size_t bytes = counts->size() * sizeof(uint64_t);
  void* bins = nullptr;
  SCCL_CHECK(stagedArray(call.device, DeviceStaging::kCounts, counts->data(), bytes, false, &bins));
  SCCL_CHECK(callKernels(call).absBitHistogram(call.acc, ctx.acc_dtype, range.begin, range.end,
                                               w.base, w.shift, w.bins,
                                               static_cast<uint64_t*>(bins), call.stream));
  return unstageArray(call.device, counts->data(), bins, bytes);
}

// The fused pass itself, with the call's vectors; the non-finite count comes to the host.
scclResult_t runPass(SparseCall& call, AccumulateSelectArgs& a) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = callKernels(call);
  a.acc = call.acc;
  a.residual = call.residual;
  a.acc_dtype = ctx.acc_dtype;
  a.grad = call.sendbuf;
  a.grad_dtype = ctx.dtype;
  a.count = ctx.count;
  // The output is not zeroed in this pass (AccumulateSelectArgs::out): recvbuf stays untouched
  // until the peers' headers and indices have passed their checks (docs/reliability.md), and
  // writeDense then writes it once.
  if (call.device == nullptr) {
    a.nonfinite = &call.nonfinite_local;
    return kernels.accumulateSelect(a, call.stream);
  }
  // The device word is added to: zeroed first, read back after (8 bytes).
  SCCL_CHECK(kernels.fillZero(call.nonfinite_word, sizeof(uint64_t), call.stream));
  a.nonfinite = call.nonfinite_word;
  SCCL_CHECK(kernels.accumulateSelect(a, call.stream));
  return call.device->toHost(&call.nonfinite_local, call.nonfinite_word, sizeof(uint64_t));
}

}  // namespace

scclResult_t accumulateAndSelect(SparseCall& call, IndexRange range, bool selects,
                                 size_t* selected) {
  const ReductionContext& ctx = *call.ctx;
  const ThresholdQuery query = selectionQuery(call, range);
  const bool corrected = ctx.config.density_correction == "histogram";
  const bool early = !corrected && selects && ctx.estimator.thresholdBeforeData();
  const bool host = call.device == nullptr;
  double candidate_floor = 0;
  const bool pass_candidates =
      host && selects && !corrected && !early && candidateFloor(ctx, &candidate_floor);
  const bool topk = ctx.estimator.thresholdIsKthLargest() && query.k_target_local > 0 &&
                    query.k_target_local < range.size();
  AccumulateSelectArgs a;
  if (selects) {
    a.begin = range.begin;
    a.end = range.end;
  }
  CorrectionWindow window;
  std::vector<uint64_t> counts;
  size_t ncandidates = 0;
  int64_t* idx = nullptr;  // the kernels' array of this rank's selection
  Clock::time_point start = Clock::now();
  if (corrected) {
    window = correctionWindow(ctx);
    counts.assign(window.bins + 1, 0);
    void* bins = nullptr;
    SCCL_CHECK(stagedArray(call.device, DeviceStaging::kCounts, counts.data(),
                           counts.size() * sizeof(uint64_t), false, &bins));
    a.bins = window.bins;
    a.shift = window.shift;
    a.base_bits = window.base;
    a.counts = static_cast<uint64_t*>(bins);
    if (host && selects) {
      // Counted and kept from the floor edge up (a quarter octave below the threshold): the
      // kernel's window starts there, so every counted entry is a candidate.
      const size_t element = accElementSize(ctx);
      if (ctx.candidate_indices.empty()) {
        ctx.candidate_indices.resize(candidateRoom(range, 8 * query.k_target_local));
      }
      ctx.candidate_values.resize(ctx.candidate_indices.size() * element);
      a.bins = window.bins - window.floor_edge;
      a.base_bits = window.base + (uint64_t(window.floor_edge) << window.shift);
      a.counts = counts.data() + window.floor_edge;
      a.floor = windowEdge(window, window.floor_edge, ctx.acc_dtype);
      a.idx = ctx.candidate_indices.data();
      a.val = ctx.candidate_values.data();
      a.capacity = ctx.candidate_indices.size();
      a.ncandidates = &ncandidates;
    }
  } else if (early) {
    SCCL_CHECK(ctx.estimator.threshold(query, &call.threshold));
    const size_t room =
        std::max(likelySelection(ctx, range, query.k_target_local), ctx.local_indices.size());
    if (ctx.local_indices.size() < room) ctx.local_indices.resize(room);
    void* array = nullptr;
    SCCL_CHECK(stagedArray(call.device, DeviceStaging::kLocalIndices, ctx.local_indices.data(),
                           room * sizeof(int64_t), false, &array));
    idx = static_cast<int64_t*>(array);
    a.floor = call.threshold;
    a.idx = idx;
    a.capacity = room;
    a.ncandidates = &ncandidates;
  } else if (pass_candidates) {
    if (ctx.candidate_indices.empty()) {
      ctx.candidate_indices.resize(candidateRoom(range, 8 * query.k_target_local));
    }
    ctx.candidate_values.resize(ctx.candidate_indices.size() * accElementSize(ctx));
    a.floor = candidate_floor;
    a.idx = ctx.candidate_indices.data();
    a.val = ctx.candidate_values.data();
    a.capacity = ctx.candidate_indices.size();
    a.ncandidates = &ncandidates;
  }
  SCCL_CHECK(runPass(call, a));
  call.time_select_us += microsecondsSince(start);

  bool candidates_hold_selection = corrected && host && selects;
  if (corrected) {
    if (!host) {
      SCCL_CHECK(
          unstageArray(call.device, counts.data(), a.counts, counts.size() * sizeof(uint64_t)));
    }
    uint64_t predicted_k = 0;
    bool decided = false;
    SCCL_CHECK(correctFromCounts(call, window, counts, window.floor_edge, &call.threshold,
                                 &predicted_k, &decided));
    if (!decided) {  // fewer than k from the floor edge up, on all ranks together: count it all
      SCCL_CHECK(countWholeWindow(call, range, selects, window, &counts));
      SCCL_CHECK(
          correctFromCounts(call, window, counts, 0, &call.threshold, &predicted_k, &decided));
      candidates_hold_selection = false;  // the threshold may lie below the candidates' floor
    }
  }
  *selected = 0;
  if (!selects) return scclSuccess;

  start = Clock::now();
  size_t n = 0;
  bool values_ready = false;
  if (candidates_hold_selection && ncandidates <= a.capacity) {
    n = ctx.acc_dtype == scclFloat64 ? keepAtOrAbove<uint64_t>(ctx, ncandidates, call.threshold)
                                     : keepAtOrAbove<uint32_t>(ctx, ncandidates, call.threshold);
    idx = ctx.local_indices.data();
    values_ready = true;
  } else if (early && ncandidates <= a.capacity) {
    n = ncandidates;
    SCCL_CHECK(unstageArray(call.device, ctx.local_indices.data(), idx, n * sizeof(int64_t)));
  } else if (pass_candidates && topk && ncandidates <= a.capacity &&
             ncandidates >= query.k_target_local) {
    double kth = 0;
    SCCL_CHECK(cpuKernels().kthLargestAbs(ctx.candidate_values.data(), ctx.acc_dtype, 0,
                                          ncandidates, query.k_target_local, &kth, nullptr));
    // The estimator's rule: a NaN among the k largest selects every NaN and infinity.
    call.threshold = std::isnan(kth) ? std::numeric_limits<double>::infinity() : kth;
    ctx.estimator.adoptThreshold(call.threshold);
    n = ctx.acc_dtype == scclFloat64 ? keepAtOrAbove<uint64_t>(ctx, ncandidates, call.threshold)
                                     : keepAtOrAbove<uint32_t>(ctx, ncandidates, call.threshold);
    idx = ctx.local_indices.data();
    values_ready = true;
  } else {
    if (!corrected && !early) SCCL_CHECK(ctx.estimator.threshold(query, &call.threshold));
    if (pass_candidates && ncandidates <= a.capacity && call.threshold >= candidate_floor) {
      // Every entry at or above the threshold is at or above the floor: a candidate.
      n = ctx.acc_dtype == scclFloat64 ? keepAtOrAbove<uint64_t>(ctx, ncandidates, call.threshold)
                                       : keepAtOrAbove<uint32_t>(ctx, ncandidates, call.threshold);
      idx = ctx.local_indices.data();
      values_ready = true;
    } else {
      // Overflowed candidates: the count was exact; the next call's buffer is sized for it.
      if (ncandidates > a.capacity && (corrected || pass_candidates)) {
        ctx.candidate_indices.resize(candidateRoom(range, ncandidates + ncandidates / 4));
      }
      const size_t room = std::max(likelySelection(ctx, range, query.k_target_local), ncandidates);
      SCCL_CHECK(selectRange(call, range, call.threshold, room, &n, &idx));
    }
  }
  SCCL_CHECK(trimLocal(call, query.k_target_local, idx, values_ready, &n));
  *selected = n;
  call.time_select_us += microsecondsSince(start);
  return scclSuccess;
}

}  // namespace sccl
