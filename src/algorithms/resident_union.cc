// The union call: the gather reduction where every rank selects over a search space the ranks
// share (the whole vector), or over exclusive ranges with an estimator fitted to the call's data:
// its exact top-k, or the entries at or above a threshold (hard threshold, SIDCo, GaussianK,
// RedSync), with every per-index step on the kernels' side. Device
// buffers run it with the CUDA kernels; host buffers with the CPU kernels over host memory
// (gather_reduction.cc), one call path. The host reads back one plan per call, which sizes the
// value all-reduce; indices and values never cross to it.
//
// Paper: the Top-k baseline of MiCRO and ExDyna (D. Yoon and S. Oh, "MiCRO: Near-Zero Cost
// Gradient Sparsification for Scaling and Accelerating Distributed DNN Training", HiPC 2023),
// after A. F. Aji and K. Heafield, "Sparse Communication for Distributed Gradient Descent"
// (EMNLP 2017); reference code kljp/micro (its TopKReducer: index all-gather, value
// all-reduce at the union).
// Steps of one call on rank r (d_ = the kernels' memory, all on the call's stream):
//  1. d_ranges = every rank's range and r's slot header = [fingerprint, call number, 0, 0, k_r]
//     in one upload of 16 n + 40 bytes. Top-k: k_r = min(k, r's range) and the slot holds the
//     largest k_r, K. A threshold (hard threshold, SIDCo, ...): the counts follow from the data,
//     so the slot is sized before it, K = the previous such call's largest count plus a quarter
//     and 64 (twice k at the first call), the same on every rank, and the selection writes k_r;
//  2. d_acc = d_residual + gradient, the non-finite count into the slot (accumulate);
//  3. top-k: selectTopK, r's exact top-k (ties to the lowest indices) ascending into the slot,
//     the k-th magnitude pattern into its header (no sort of the vector: a radix select on the
//     CUDA backend); a threshold: the estimator's threshold (SIDCo reads its fits' moments back
//     first; its count check chooses the threshold on the device, into the slot's reserved word,
//     which selectAboveCountedAt reads), then selectAboveCounted, the first K entries at or
//     above it ascending into the slot and their full count into its header;
//  4. all-gather the slots (40 + 8 K bytes each);
//  5. planUnion (kernels/shared/union_plan.h): every slot's header checked (call, config, count
//     within its range and the slot), non-finite values, every slice checked (inside its rank's
//     range, strictly ascending), the union of the slices sorted without repeats into d_global
//     and its length u;
//  6. the plan read back (64 + 16 n bytes) and the one wait: the host applies a failed check or
//     the non-finite policy (nothing written yet), adopts the threshold (SIDCo's from the plan's
//     edge word, this rank's reserved word), observes the counts.
//     A count past a speculative slot (kPlanOverflow: every rank sees the same slots, so every
//     rank takes this branch) repeats steps 3-6 once with K = the largest count: one more
//     exchange, read-back and wait, at the first call of a threshold and when the counts grow
//     by more than a quarter; a count past the exact slot is then refused as any other;
//  7. gatherAndZero of d_acc at the u indices, all-reduce of the u values (rank order), divided
//     by n for scclAvg; writeDense of recvbuf;
//  8. the caller swaps residual and accumulator.
// On host buffers (pass_candidates: the CPU's pass reports its candidates' count at once) the
// pass of step 2 also keeps every entry at or above a floor (a quarter octave below the last
// call's threshold or k-th value; a threshold known before the data itself) with its value, and
// step 3 selects among them (selectTopKCandidates when at least k qualified;
// selectCandidatesCounted when the threshold is at or above the floor) unless more qualified than
// their room: the range is read once per call, as the host reduction's did. A threshold's first
// exchange carries the headers alone (capacity 0) and the second the slots at the largest count:
// the exact bytes, a plan read back costing nothing there.
// Host read-backs: one (the plan), two at a call whose counts outgrow the speculative slot, and
// SIDCo's fits' own (one per stage: its moments; the count check reads nothing back). Waits: one
// with collectives on the stream (NCCL); over host transports one more per collective
// (StagedExchange): three. Bytes on the wire per rank: slots (n-1) (40 + 8 K) in, 40 + 8 K out (on
// device buffers a threshold's K carries the speculative quarter more, the price of the count
// exchange and read-back it saves; on host buffers 40 more for the headers' exchange, K exact);
// values 2 (n-1)/n u 4 each way. The selections, values, outputs, residuals and thresholds are the
// same bit for bit on both backends and equal the exact reference's
// (tests/unit/test_resident_union.cc).
#include "algorithms/resident_union.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/gather_selection.h"
#include "algorithms/global_values.h"
#include "algorithms/plan_readback.h"
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/error.h"
#include "estimators/magnitude_window.h"
#include "kernels/shared/magnitude_bits.h"
#include "kernels/shared/union_plan.h"
#include "algorithms/reduction_context.h"

namespace sccl {
bool residentUnionApplies(const ReductionContext& ctx) {
  return std::strcmp(ctx.reduction.name, "gather") == 0 &&
         ctx.config.density_correction != "histogram" &&
         ctx.search.soleSelector(ctx.iteration) < 0 && ctx.config.max_density_slack < 0;
}

namespace {

// The slot of a union whose counts follow from the data (a threshold), sized before the data:
// the largest count of the previous such call (ctx.union_slot_hint, from the plan every rank read)
// with a quarter more for the data's drift, or twice k before one, at most the largest range. The
// same on every rank, which the slot all-gather needs. A count past it costs one more slot
// exchange and read-back (kPlanOverflow), never a wrong answer.
uint64_t speculativeCapacity(const ReductionContext& ctx, uint64_t largest_range) {
  const uint64_t last = ctx.union_slot_hint;
  const uint64_t guess = last > 0 ? last + last / 4 + 64 : 2 * ctx.k_target + 64;
  return std::max<uint64_t>(1, std::min(guess, largest_range));
}

}  // namespace

scclResult_t runResidentUnion(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors,
                              bool pass_candidates) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(ctx.comm->nranks);
  const int rank = ctx.comm->rank;
  const auto start = std::chrono::steady_clock::now();
  const double comm_us_before = call.time_comm_us;  // the exchanges count as communication
  const bool topk = std::strcmp(ctx.estimator.name(), "topk") == 0;

  // Step 1. Top-k: every rank's count is known before the data, min(k, its range), and the slot
  // holds the largest of them. A threshold: the counts come from the data, and the slot is
  // sized speculatively (speculativeCapacity).
  const auto count_of = [&](IndexRange r) {
    return r.empty() ? uint64_t{0} : std::min<uint64_t>(localTarget(ctx, r), r.size());
  };
  const IndexRange range = ctx.search.rangeFor(rank, ctx.iteration);
  void* upload = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kRecord, 2 * n * sizeof(uint64_t), &upload));
  uint64_t* ranges = static_cast<uint64_t*>(upload);
  void* upload_host = nullptr;
  SCCL_CHECK(device.hostBuffer(DeviceStaging::kUploadHost,
                               (2 * n + kUnionSlotHeaderWords) * sizeof(uint64_t), &upload_host));
  uint64_t* words = static_cast<uint64_t*>(upload_host);
  writeCallRanges(ctx, words);
  SCCL_CHECK(device.toDevice(upload, words, 2 * n * sizeof(uint64_t)));
  uint64_t capacity = 1;
  uint64_t largest_range = 1;
  for (size_t r = 0; r < n; ++r) {
    const IndexRange other = ctx.search.rangeFor(int(r), ctx.iteration);
    capacity = std::max(capacity, count_of(other));
    largest_range = std::max<uint64_t>(largest_range, other.size());
  }
  const uint64_t own_topk = count_of(range);  // top-k only
  // A threshold's slot: speculative where a count costs a read-back and a wait (device memory);
  // where the kernels' memory is the host's (pass_candidates), the first exchange carries the
  // headers alone (capacity 0: every count past it) and the second the slots at the largest
  // count, the host reduction's collectives and exact bytes.
  if (!topk) capacity = pass_candidates ? 0 : speculativeCapacity(ctx, largest_range);
  // The slot's header: fingerprint, call number, non-finite count and k-th pattern (top-k: the
  // kernels write them), then the count (top-k: known; a threshold: the selection writes it).
  uint64_t* header = words + 2 * n;
  std::fill(header, header + kUnionSlotHeaderWords, uint64_t{0});
  header[kRecordFingerprint] = ctx.fingerprint;
  header[kRecordSequence] = ctx.iteration;
  if (topk) header[kUnionSlotCount] = own_topk;
  void *slot_memory = nullptr, *slots = nullptr, *plan = nullptr, *global = nullptr;
  // The slot buffers at `capacity`, with this rank's header uploaded.
  const auto size_slots = [&]() -> scclResult_t {
    const size_t slot_words = unionSlotWords(capacity);
    SCCL_CHECK(
        device.buffer(DeviceStaging::kLocalIndices, slot_words * sizeof(uint64_t), &slot_memory));
    SCCL_CHECK(
        device.buffer(DeviceStaging::kGatheredIndices, n * slot_words * sizeof(uint64_t), &slots));
    SCCL_CHECK(
        device.buffer(DeviceStaging::kGlobalIndices, n * capacity * sizeof(int64_t), &global));
    return device.toDevice(slot_memory, header, kUnionSlotHeaderWords * sizeof(uint64_t));
  };
  SCCL_CHECK(size_slots());
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, gatherPlanWords(n) * sizeof(uint64_t), &plan));
  const auto slot = [&] { return static_cast<uint64_t*>(slot_memory); };
  const auto indices = [&] { return reinterpret_cast<int64_t*>(slot() + kUnionSlotHeaderWords); };

  // Steps 2-3. The padding past this rank's count is zeroed or -1: every byte sent is defined.
  // The pass streams block by block as the gather's; top-k with pass candidates keeps every
  // entry at or above a quarter octave below the last call's k-th value (candidateFloor).
  AccumulateSelectArgs a = accumulatePass(call, vectors, slot() + kRecordNonFinite);
  double threshold = ctx.estimator.currentThreshold();
  double floor = 0;
  const bool selects = topk ? own_topk > 0 && own_topk < range.size() : range.size() > 0;
  // With pass candidates, a threshold known before the data (a fixed one, scaling without
  // correction) is their floor itself: the candidates are the selection.
  const bool early = pass_candidates && !topk && selects && ctx.estimator.thresholdBeforeData();
  if (early) SCCL_CHECK(ctx.estimator.threshold(selectionQuery(call, range), &threshold));
  if (early) floor = threshold;
  const bool keep = pass_candidates && selects && (early || candidateFloor(ctx, &floor));
  size_t room = 0, ncandidates = 0;
  void *candidate_indices = nullptr, *candidate_values = nullptr;
  if (keep) {
    room = std::max(candidateRoom(range, 8 * localTarget(ctx, range)),
                    std::min<size_t>(ctx.candidate_room, range.size()));
    SCCL_CHECK(device.buffer(DeviceStaging::kCandidateIndices, room * sizeof(int64_t),
                             &candidate_indices));
    SCCL_CHECK(device.buffer(DeviceStaging::kCandidateValues, room * accElementSize(ctx),
                             &candidate_values));
    a.begin = range.begin;
    a.end = range.end;
    a.floor = floor;
    a.idx = static_cast<int64_t*>(candidate_indices);
    a.val = candidate_values;
    a.capacity = room;
    a.ncandidates = &ncandidates;
  }
  SCCL_CHECK(kernels.accumulateSelect(a, stream));
  call.acc = vectors.acc;
  if (keep) {  // an overflow was counted exactly: the next call has room for this many
    ctx.candidate_room = ncandidates <= room ? std::max(ctx.candidate_room, room)
                                             : candidateRoom(range, ncandidates + ncandidates / 4);
  }
  // The exact top-k of the range into the slot (ties to the lowest indices), from the candidates
  // when at least k qualified and all fit; the rest of the slot zeroed. A k past the slot (DGC's
  // trim in a speculative slot) selects nothing: its count overflows the plan, which sizes the
  // slots again.
  const auto select_top = [&](uint64_t k) -> scclResult_t {
    const uint64_t written = k <= capacity ? k : 0;
    if (written > 0 && keep && ncandidates <= room && ncandidates >= k) {
      // Every entry left out lies below the floor, so below the k-th largest candidate.
      SCCL_CHECK(kernels.selectTopKCandidates(
          static_cast<const int64_t*>(candidate_indices), candidate_values, ctx.acc_dtype,
          ncandidates, size_t(k), indices(), slot() + kRecordReserved, stream));
    } else if (written > 0 && k < range.size()) {
      SCCL_CHECK(kernels.selectTopK(vectors.acc, ctx.acc_dtype, range.begin, range.end, size_t(k),
                                    indices(), slot() + kRecordReserved, stream));
    } else if (written > 0) {  // the whole range (threshold 0: the k-th pattern stays 0)
      SCCL_CHECK(kernels.selectAbovePadded(vectors.acc, ctx.acc_dtype, range.begin, range.end, 0.0,
                                           size_t(k), indices(), size_t(k), stream));
    }
    if (written < capacity) {
      SCCL_CHECK(
          kernels.fillZero(indices() + written, (capacity - written) * sizeof(int64_t), stream));
    }
    return scclSuccess;
  };
  bool candidates_hold = false;  // a threshold at or above the floor of candidates that all fit
  bool trimmed = false;          // DGC asked for exactly k after counting past 4k/3
  // SIDCo's count check chose the threshold on the device: its pattern is in the slot's reserved
  // word, which the plan carries back (kPlanEdge).
  bool threshold_on_device = false;
  const uint64_t own_k = localTarget(ctx, range);
  const auto select_at_threshold = [&]() -> scclResult_t {
    if (trimmed) return select_top(own_k);  // its count, k, is in the uploaded header
    if (threshold_on_device) {
      return kernels.selectAboveCountedAt(
          vectors.acc, ctx.acc_dtype, range.begin, std::max(range.begin, range.end),
          slot() + kRecordReserved, size_t(capacity), indices(), slot() + kUnionSlotCount, stream);
    }
    if (candidates_hold) {
      return kernels.selectCandidatesCounted(
          static_cast<const int64_t*>(candidate_indices), candidate_values, ctx.acc_dtype,
          ncandidates, threshold, size_t(capacity), indices(), slot() + kUnionSlotCount, stream);
    }
    return kernels.selectAboveCounted(vectors.acc, ctx.acc_dtype, range.begin,
                                      std::max(range.begin, range.end), threshold, size_t(capacity),
                                      indices(), slot() + kUnionSlotCount, stream);
  };
  if (topk) {
    SCCL_CHECK(select_top(own_topk));
  } else {
    // The estimator may read the accumulated range (SIDCo's fits, through its own read-backs);
    // in the kernels' memory it may leave the threshold there (SIDCo's count check).
    if (range.size() > 0 && !early && pass_candidates) {
      SCCL_CHECK(ctx.estimator.threshold(selectionQuery(call, range), &threshold));
    } else if (range.size() > 0 && !early) {
      SCCL_CHECK(ctx.estimator.thresholdOrWord(
          selectionQuery(call, range), slot() + kRecordReserved, &threshold, &threshold_on_device));
    }
    // Every entry at or above the threshold is then at or above the floor: a candidate.
    candidates_hold = keep && ncandidates <= room && threshold >= floor;
    // DGC, when more than 4k/3 passed its sampled threshold, made the threshold the k-th largest
    // and asks for exactly k: the exact top-k (the host reduction's trim of the ties at it keeps
    // the lowest indices, as selectTopK does), its count k known here.
    trimmed = ctx.estimator.exactCount() && own_k > 0 && own_k < range.size();
    if (trimmed) {
      header[kUnionSlotCount] = own_k;
      SCCL_CHECK(
          device.toDevice(slot() + kUnionSlotCount, header + kUnionSlotCount, sizeof(uint64_t)));
    }
    SCCL_CHECK(select_at_threshold());
  }

  // Steps 4-6.
  GatherPlanParams params = callPlanParams(ctx);
  params.speculative = topk ? 0 : 1;
  const uint64_t* p = nullptr;
  const auto exchange_and_plan = [&]() -> scclResult_t {
    SCCL_CHECK(
        exchange.allGather(call, slot(), slots, unionSlotWords(capacity) * sizeof(uint64_t)));
    SCCL_CHECK(kernels.planUnion(static_cast<const uint64_t*>(slots), params, size_t(capacity),
                                 ranges, static_cast<int64_t*>(global),
                                 static_cast<uint64_t*>(plan), stream));
    return readPlan(call, plan, n, &p);
  };
  SCCL_CHECK(exchange_and_plan());
  if (threshold_on_device) {
    // Whatever the plan's status: the host run's estimator kept its threshold too.
    threshold = magnitudeValue(p[kPlanEdge], ctx.acc_dtype);
    ctx.estimator.adoptThreshold(threshold);
  }
  if (p[kPlanStatus] == kPlanOverflow) {
    // A rank selected more than the slot holds: every rank saw the same slots, so every rank
    // exchanges them once more at the largest count (no non-finite value anywhere: that status
    // comes first), with the plan's usual refusal of a count past it. The slots are uploaded
    // again, a threshold chosen on the device with them.
    capacity = p[kPlanMaxK];
    params.speculative = 0;
    if (threshold_on_device) header[kRecordReserved] = p[kPlanEdge];
    SCCL_CHECK(size_slots());
    SCCL_CHECK(select_at_threshold());
    SCCL_CHECK(exchange_and_plan());
  }
  call.time_select_us += microsecondsSince(start) - (call.time_comm_us - comm_us_before);
  bool handled = false;
  SCCL_CHECK(applyPlanStatus(call, p, &handled));
  if (handled) return scclSuccess;  // discarded for non-finite values
  if (topk) {
    // The host reduction's threshold: the k-th value (0 for the whole range, +inf for none).
    call.threshold = own_topk == 0              ? std::numeric_limits<double>::infinity()
                     : own_topk == range.size() ? 0.0
                                                : magnitudeValue(p[kPlanEdge], ctx.acc_dtype);
    ctx.estimator.adoptThreshold(call.threshold);
  } else {
    call.threshold = threshold;
  }
  adoptPlanCounts(call, p);
  if (!topk) ctx.union_slot_hint = call.k_max;
  const uint64_t k_global = call.k_global;

  // Step 7: the plan checked every slice before the host went on.
  SCCL_CHECK(reduceGlobalValues(call, exchange, vectors, static_cast<const int64_t*>(global),
                                k_global, nullptr));
  call.residual_updated = true;
  ctx.estimator.observe(k_global, ctx.k_target);
  ctx.search.observeCounts(ctx.rank_counts.data(), ctx.iteration);
  return scclSuccess;
}

}  // namespace sccl
