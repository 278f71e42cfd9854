// sync_free: the gather reduction's data path with every message size fixed at creation, so that
// no step needs a count from another rank before it can be issued. On a GPU this is the form that
// a CUDA graph can capture: nothing waits for the host (docs/algorithms/sync_free.md).
//
// Presets micro_sync_free and exdyna_sync_free (MiCRO / ExDyna partitions, threshold scaling).
// capacity = max(1, ceil(k/n (1 + slack))), slack = maxDensitySlack (0.25 when that is < 0).
// Steps of one call on rank r at iteration t:
//  0. acc = residual + gradient, in the pass that also selects when the threshold is known
//     before the data (KernelBackend::accumulateSelect).
//  1. range = search space's range for (r, t); threshold from the estimator; select |acc| >=
//     threshold in the range (exact top-k trims ties by index), then keep at most `capacity`
//     entries, the largest (ties at the cut-off: lowest indices).
//  2. all-gather one slot of 4 + capacity int64 per rank: k_r, non-finite count, config
//     fingerprint, call number, then the k_r ascending indices padded with -1. Its size is known
//     in advance: no count exchange precedes it. The header is checked as the gather reduction's
//     (same call, same config, k_r <= capacity) and every index is range-checked before use.
//  3. values: n * capacity slots, slot r * capacity + j = acc[index j of rank r] (0 for padding),
//     all-reduced (sum, rank order): every rank's value at every selected index, as in MiCRO.
//  4. recvbuf = zeros + scatter of the k' = sum k_r selected values (divided by n for scclAvg);
//     residual = acc zeroed at all k' indices (this rank's values there were sent). Values above
//     the capacity cut stay in the residual (error feedback), never dropped.
//  5. estimator and search space observe (k', k_r), read from the gathered slots: the same data
//     on every rank, so the threshold update is identical everywhere (and can run on the device).
// Bytes per rank (n > 1, float32 residual): all-gather (4 + capacity) 8 out, (n-1) times that in;
// all-reduce 2 (n-1)/n * n capacity 4 each way. Against the gather reduction it saves the 32-byte
// header round and pays for the padding (capacity instead of k_r and max k_r).
// Differences from the gather reduction: only exclusive search spaces where every rank selects
// (micro, exdyna), so no index is chosen twice; no in-call density correction (it needs counts
// first). With the same maxDensitySlack both give bitwise identical outputs and residuals.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/index_exchange.h"
#include "algorithms/reductions.h"
#include "algorithms/selection_trim.h"
#include "algorithms/sync_free_capacity.h"
#include "algorithms/sync_free_slots.h"
#include "algorithms/threshold_query.h"
#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "algorithms/reduction_context.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

uint64_t capacityOf(const ReductionContext& ctx) {
  return syncFreeCapacity(ctx.k_target, ctx.comm->nranks, ctx.config.max_density_slack, ctx.count);
}

// Steps 0 and 1: acc = residual + gradient, and the selection into slot + kSlotHeaderWords (at
// most `capacity` entries). With a threshold known before the data (the presets' scaling, or
// fixed) one pass accumulates and selects (KernelBackend::accumulateSelect); else the pass
// accumulates and the estimator then reads the range.
scclResult_t selectCapped(SparseCall& call, IndexRange range, uint64_t capacity, size_t* selected) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = cpuKernels();
  const ThresholdQuery query = selectionQuery(call, range);
  const bool early = range.size() > 0 && ctx.estimator.thresholdBeforeData();
  if (early) SCCL_CHECK(ctx.estimator.threshold(query, &call.threshold));
  // Every qualifying index is needed to keep the largest; the selection reports the exact count
  // when the buffer is short, so one retry suffices.
  std::vector<int64_t>& found = ctx.global_indices;
  size_t want = std::min<size_t>(range.size(), std::max<size_t>(4096, 2 * capacity));
  if (found.size() < want) found.resize(want);
  size_t n = 0;
  AccumulateSelectArgs pass;
  pass.acc = call.acc;
  pass.residual = call.residual;
  pass.acc_dtype = ctx.acc_dtype;
  pass.grad = call.sendbuf;
  pass.grad_dtype = ctx.dtype;
  pass.count = ctx.count;
  pass.nonfinite = &call.nonfinite_local;
  if (early) {
    pass.begin = range.begin;
    pass.end = range.end;
    pass.floor = call.threshold;
    pass.idx = found.data();
    pass.capacity = found.size();
    pass.ncandidates = &n;
  }
  SCCL_CHECK(kernels.accumulateSelect(pass, nullptr));
  if (range.size() == 0) {
    *selected = 0;
    return scclSuccess;
  }
  if (!early) {
    SCCL_CHECK(ctx.estimator.threshold(query, &call.threshold));
    SCCL_CHECK(kernels.selectAbove(call.acc, ctx.acc_dtype, range.begin, range.end, call.threshold,
                                   found.data(), nullptr, found.size(), &n, nullptr));
  }
  if (n > found.size()) {
    found.resize(n);
    SCCL_CHECK(kernels.selectAbove(call.acc, ctx.acc_dtype, range.begin, range.end, call.threshold,
                                   found.data(), nullptr, n, &n, nullptr));
  }
  if (ctx.estimator.exactCount()) {
    n = trimSelection(call.acc, ctx.acc_dtype, found.data(), n, query.k_target_local,
                      call.threshold);
  }
  if (n > capacity) {
    ctx.values.resize(n * accElementSize(ctx));
    double cutoff = 0;
    SCCL_CHECK(cutoffAmongSelected(call.acc, ctx.acc_dtype, found.data(), n, capacity,
                                   ctx.values.data(), &cutoff));
    n = trimSelection(call.acc, ctx.acc_dtype, found.data(), n, capacity, cutoff);
  }
  std::copy_n(found.data(), n, ctx.local_indices.data() + kSlotHeaderWords);
  *selected = n;
  return scclSuccess;
}

// Steps 3 and 4.
scclResult_t reduceSlotsAndWrite(SparseCall& call, uint64_t capacity) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = cpuKernels();
  const size_t n = static_cast<size_t>(ctx.comm->nranks);
  const size_t slot = kSlotHeaderWords + capacity;
  const size_t element = accElementSize(ctx);
  const size_t slots = n * capacity;
  ctx.values.resize(slots * element);
  SCCL_CHECK(kernels.fillZero(ctx.values.data(), slots * element, nullptr));
  for (size_t r = 0; r < n; ++r) {
    const int64_t* idx = ctx.gathered_indices.data() + r * slot + kSlotHeaderWords;
    SCCL_CHECK(kernels.gather(call.acc, ctx.acc_dtype, idx, ctx.rank_counts[r],
                              static_cast<std::byte*>(ctx.values.data()) + r * capacity * element,
                              nullptr));
  }
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allReduce(ctx.values.data(), ctx.values.data(), slots, ctx.acc_dtype, ReduceOp::Sum);
  }));
  countAllReduce(call, slots * element);
  if (call.op == scclAvg)
    SCCL_CHECK(divideByRanks(ctx.values.data(), slots, ctx.acc_dtype, int(n)));
  SCCL_CHECK(kernels.fillZero(call.recvbuf, ctx.count * dataTypeSize(ctx.dtype), nullptr));
  for (size_t r = 0; r < n; ++r) {
    const int64_t* idx = ctx.gathered_indices.data() + r * slot + kSlotHeaderWords;
    SCCL_CHECK(
        kernels.scatterValues(call.recvbuf, ctx.dtype, idx,
                              static_cast<std::byte*>(ctx.values.data()) + r * capacity * element,
                              ctx.acc_dtype, ctx.rank_counts[r], 1.0, nullptr));
    SCCL_CHECK(kernels.zeroAt(call.acc, ctx.acc_dtype, idx, ctx.rank_counts[r], nullptr));
  }
  call.residual_updated = true;
  return scclSuccess;
}

}  // namespace

std::vector<uint64_t> rankRanges(const ReductionContext& ctx) {
  const size_t n = static_cast<size_t>(ctx.comm->nranks);
  std::vector<uint64_t> ranges(2 * n);
  for (size_t r = 0; r < n; ++r) {
    const IndexRange of = ctx.search.rangeFor(static_cast<int>(r), ctx.iteration);
    ranges[2 * r] = of.begin;
    ranges[2 * r + 1] = of.end;
  }
  return ranges;
}

scclResult_t checkSlotHeaders(SparseCall& call, uint64_t capacity, const int64_t* words,
                              size_t stride_words, std::vector<CallHeader>* headers) {
  const ReductionContext& ctx = *call.ctx;
  const uint64_t fingerprint = ctx.fingerprint;  // the config's and the density in effect
  const size_t n = static_cast<size_t>(ctx.comm->nranks);
  const std::vector<uint64_t> ranges = rankRanges(ctx);
  const SlotHeaderVerdict verdict = checkSlotHeaderWords(words, stride_words, int(n), capacity,
                                                         fingerprint, ctx.iteration, ranges.data());
  if (verdict.fault != SlotFault::None) {
    const size_t r = static_cast<size_t>(verdict.rank);
    const int64_t* header = words + r * stride_words;
    if (verdict.fault == SlotFault::OtherCall) {
      return fail(scclInvalidUsage,
                  "sparse all-reduce (sync_free): rank %zu is at call %llu of a sparsifier with "
                  "fingerprint %016llx, rank %d at call %llu of %016llx (mismatched calls or "
                  "configs)",
                  r, static_cast<unsigned long long>(header[3]),
                  static_cast<unsigned long long>(header[2]), ctx.comm->rank,
                  static_cast<unsigned long long>(ctx.iteration),
                  static_cast<unsigned long long>(fingerprint));
    }
    const uint64_t limit = std::min<uint64_t>(capacity, ranges[2 * r + 1] - ranges[2 * r]);
    return fail(scclRemoteError,
                "rank %zu claims %llu selected entries; at most %llu allowed (capacity %llu)", r,
                static_cast<unsigned long long>(header[0]), static_cast<unsigned long long>(limit),
                static_cast<unsigned long long>(capacity));
  }
  headers->resize(n);
  for (size_t r = 0; r < n; ++r) {
    const int64_t* header = words + r * stride_words;
    (*headers)[r] = CallHeader{uint64_t(header[0]), uint64_t(header[1]), uint64_t(header[2]),
                               uint64_t(header[3])};
    ctx.rank_counts[r] = uint64_t(header[0]);
  }
  return scclSuccess;
}

uint64_t syncFreeCapacity(uint64_t k_target, int nranks, double max_density_slack, uint64_t count) {
  const double slack = max_density_slack >= 0 ? max_density_slack : kSyncFreeDefaultSlack;
  const double per_rank = double(k_target) / double(std::max(1, nranks));
  // Clamped in double: the cast of ceil(+inf) or of anything above 2^64 is undefined.
  const double capacity = std::min(std::ceil(per_rank * (1.0 + slack)), double(count));
  return std::max<uint64_t>(1, uint64_t(capacity));
}

scclResult_t prepareSyncFreeReduction(const ReductionContext& ctx) {
  SCCL_REQUIRE_ARG(ctx.search.exclusive() && ctx.search.soleSelector(0) < 0,
                   "reduction 'sync_free' needs an exclusive search space in which every rank "
                   "selects (micro or exdyna); this config has searchSpace '%s'",
                   ctx.config.search.c_str());
  SCCL_REQUIRE_ARG(ctx.config.density_correction != "histogram",
                   "reduction 'sync_free' cannot use densityCorrection \"histogram\": the "
                   "correction all-reduces counts before selecting, which is the host "
                   "synchronisation sync_free avoids");
  return scclSuccess;
}

scclResult_t runSyncFreeReduction(SparseCall& call) {
  const ReductionContext& ctx = *call.ctx;
  const int rank = ctx.comm->rank;
  const uint64_t capacity = capacityOf(ctx);
  const size_t slot = kSlotHeaderWords + capacity;
  const size_t n = static_cast<size_t>(ctx.comm->nranks);
  // Buffers only grow: the steady state allocates nothing (the slot size is fixed while the
  // density is; a density change resizes at most once per higher density).
  if (ctx.local_indices.size() < slot) ctx.local_indices.resize(slot);
  if (ctx.gathered_indices.size() < n * slot) ctx.gathered_indices.resize(n * slot);

  auto start = std::chrono::steady_clock::now();
  IndexRange range = ctx.search.rangeFor(rank, ctx.iteration);
  call.threshold = ctx.estimator.currentThreshold();
  size_t selected = 0;
  SCCL_CHECK(selectCapped(call, range, capacity, &selected));  // accumulates, selects if any range
  call.k_local = selected;
  int64_t* mine = ctx.local_indices.data();
  mine[0] = int64_t(selected);
  mine[1] = int64_t(call.nonfinite_local);
  mine[2] = int64_t(ctx.fingerprint);
  mine[3] = int64_t(ctx.iteration);
  std::fill(mine + kSlotHeaderWords + selected, mine + slot, int64_t{-1});
  call.time_select_us +=
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();

  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allGather(mine, ctx.gathered_indices.data(), slot * sizeof(int64_t));
  }));
  countAllGather(call, slot * sizeof(int64_t));
  std::vector<CallHeader> headers;
  SCCL_CHECK(checkSlotHeaders(call, capacity, ctx.gathered_indices.data(), slot, &headers));
  if (anyNonFinite(headers)) return applyNonFinitePolicy(call, headers);
  // Peer indices: inside the range that rank selects in, strictly ascending (no duplicates).
  std::vector<const int64_t*> slices(n);
  for (size_t r = 0; r < n; ++r)
    slices[r] = ctx.gathered_indices.data() + r * slot + kSlotHeaderWords;
  SCCL_CHECK(assembleGlobalIndices(slices, ctx.rank_counts, ctx.search, ctx.iteration, ctx.count,
                                   &ctx.global_indices));
  call.k_max = *std::max_element(ctx.rank_counts.begin(), ctx.rank_counts.end());
  call.k_global = ctx.global_indices.size();
  SCCL_CHECK(reduceSlotsAndWrite(call, capacity));
  ctx.estimator.observe(call.k_global, ctx.k_target);
  ctx.search.observeCounts(ctx.rank_counts.data(), ctx.iteration);
  return scclSuccess;
}

}  // namespace sccl
