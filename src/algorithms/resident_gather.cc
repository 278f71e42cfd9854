// The resident gather call: the gather reduction with every per-index step on the kernels' side,
// for device buffers and host buffers alike (host buffers: the CPU kernels over host memory,
// gather_reduction.cc's runResidentGatherOnHost). MiCRO and ExDyna (with the histogram density
// correction, or with a threshold known before the data: the papers' scaling rule or a fixed
// one) and CLT-k (a leader's exact top-k). The host keeps the estimator and search space (O(n)
// work per call) and reads back one plan per call, which sizes the index exchange; indices and
// values never cross to it. CLT-k's sizes are known before the data: on device buffers it reads
// nothing back and the kernels settle the call (finishUnreadLeaderCall, settled_call.h).
//
// Papers: D. Yoon and S. Oh, "MiCRO: Near-Zero Cost Gradient Sparsification for Scaling and
// Accelerating Distributed DNN Training", and "Preserving Near-Optimal Gradient Sparsification
// Cost for Scalable Distributed Deep Learning" (ExDyna); reference code kljp/micro. CLT-k:
// C.-Y. Chen et al., "ScaleCom: Scalable Sparsified Gradient Compression for
// Communication-Efficient Distributed Training" (NeurIPS 2020). The collectives are theirs (index
// all-gather or the leader's broadcast, value all-reduce), with sparsecoll's in-call density
// correction (density_correction.cc) decided on the device.
// Steps of one call on rank r (d_ = the kernels' memory, all on the call's stream):
//  1. d_ranges = every rank's range at this call and d_record's header = [fingerprint, call
//     number, 0, 0] (CLT-k: and r's count, min(k, its range)), in one upload of 16 n + 32
//     bytes (CLT-k: 40);
//  2. the fused pass: d_acc = d_residual + gradient, the non-finite count into the record, and
//     the correction window's bins over r's range into the record (no correction: one bin from
//     the threshold's pattern, so the record counts what r selects); CLT-k's leader then selects
//     its exact top-k and writes the k-th magnitude pattern into its record;
//  3. all-gather the records (32 + 8 (bins + 1) bytes each) in one collective;
//  4. planGather (kernels/shared/gather_plan.h): every peer's record checked (call, config,
//     counts against its range, non-finite values), the global bins summed in rank order, the
//     edge nearest k chosen, every rank's count and offset, the padded size;
//  5. the plan read back (64 + 16 n bytes) and the one wait: the host applies a failed check or
//     the non-finite policy, adopts the threshold, observes the counts;
//  6. selectAbovePadded: r's entries at or above the threshold into its slice (-1 padding);
//  7. all-gather the slices (max_k 8 bytes each; CLT-k: the leader broadcasts its k);
//     assembleExclusiveIndices checks every peer's slice (range, order) and writes the global
//     list, a failure into the fault word;
//  8. gatherAndZero of d_acc at the k' indices, all-reduce of the k' values (rank order), divided
//     by n for scclAvg; writeDenseUnlessFault writes recvbuf only if every slice passed;
//  9. the caller swaps residual and accumulator; restoreAfterFault puts the old residual back
//     if a slice failed and publishes the fault where the host reads it without waiting.
// Host read-backs: one (the plan); CLT-k on device buffers none. Waits: one with collectives on
// the stream (NCCL), CLT-k none; over host transports one more per collective (StagedExchange):
// three, four in the two-step exchange (CLT-k: one per collective a rank sends from).
// Bytes on the wire per rank: records (n-1) (32 + 8 (2 W B + 1)) in, 32 + 8 (2 W B + 1) out
// (4136 bytes with the defaults W = 1, B = 256; CLT-k 40), where the host path all-gathers a
// 32-byte header and all-reduces the 4104-byte bins; indices max_k 8 out, (n-1) max_k 8 in (CLT-k:
// the broadcast of k 8); values as the host path. The selections, values, outputs, residuals and
// thresholds are the host path's bit for bit.
// Two-step exchange (StreamExchange::twoStep: many ranks over a host transport): step 3 becomes
// the host reduction's two collectives, the bins all-reduced (planEdge: the edge and this rank's
// count at it, into its header) and the 32-byte headers all-gathered (planHeaders: the checks,
// counts and offsets), with the host reduction's bytes; one collective and one wait more.
// Candidates (pass_candidates: host buffers, whose CPU pass selects as it accumulates and tells
// the host its count at once): the pass counts the correction's bins from the floor edge up (a
// quarter octave below the threshold; the lower bins stay 0) and keeps every entry there with its
// value, or every entry at a threshold known before the data; the exchange is two-step, and
// after the bins' sum the ranks check together that at least k entries lie from the floor edge
// up, else every rank counts the whole window and the bins are summed again (one pass and one
// all-reduce more; the threshold may then lie below the floor). Step 6 then selects among the
// candidates (selectCandidatesPadded) instead of reading the range again, unless more qualified
// than their room (counted exactly all the same: the range is selected, and the room grows for
// the next call). So host buffers run the host reduction's collectives and bytes (header 32
// (n-1) in, bins 2 (n-1)/n 4104 each way, indices, values) and the memory traffic of its fused
// pass.
// A peer's bad index is found after the one read-back: on device buffers the call itself returns
// success with recvbuf untouched and the residual kept; scclSparsifierGetAsyncError reports it
// once the device has run the call, and the next call on the sparsifier fails with
// scclRemoteError naming the rank (every rank sees the same slices, so every rank does the
// same). On host buffers the kernels have run by then, so the call itself returns that error.
#include "algorithms/resident_gather.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/gather_selection.h"
#include "algorithms/global_values.h"
#include "algorithms/density_correction.h"
#include "algorithms/plan_readback.h"
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/shared/gather_plan.h"
#include "kernels/shared/magnitude_bits.h"
#include "algorithms/reduction_context.h"
#include "algorithms/settled_call.h"

namespace sccl {

// The two-step exchange's header is the host reductions' call header, word for word.
static_assert(sizeof(CallHeader) == kGatherRecordHeaderWords * sizeof(uint64_t) &&
                  offsetof(CallHeader, k_local) == kHeaderCount * sizeof(uint64_t) &&
                  offsetof(CallHeader, nonfinite) == kRecordNonFinite * sizeof(uint64_t) &&
                  offsetof(CallHeader, fingerprint) == kRecordFingerprint * sizeof(uint64_t) &&
                  offsetof(CallHeader, sequence) == kRecordSequence * sizeof(uint64_t),
              "the two-step header is call_header.h's CallHeader");

namespace {

// Whether all ranks together hold at least k entries in `words` summed bins from the floor edge
// up (the kernels' memory, read back: only a call whose kernels keep candidates asks, and their
// memory is the host's).
scclResult_t countedEnough(SparseCall& call, const uint64_t* tail, size_t words, bool* enough) {
  DeviceStaging& device = *call.device;
  void* host = nullptr;
  SCCL_CHECK(device.hostBuffer(DeviceStaging::kPlanHost, words * sizeof(uint64_t), &host));
  SCCL_CHECK(device.readBack(host, tail, words * sizeof(uint64_t)));
  SCCL_CHECK(device.synchronize());
  const uint64_t* summed = static_cast<const uint64_t*>(host);
  uint64_t total = 0;
  for (size_t j = 0; j < words; ++j) total += summed[j];
  *enough = total >= call.ctx->k_target;
  return scclSuccess;
}

// The leader's `count` indices (in `local` on the leader) to every rank, checked against its range
// and order by the plan's kernels and assembled into `global`; a bad one raises vectors.fault.
scclResult_t broadcastLeaderIndices(SparseCall& call, StreamExchange& exchange,
                                    const StagedVectors& vectors, void* local, uint64_t count,
                                    int sole, const void* plan, const void* ranges, void* global) {
  SCCL_CHECK(exchange.broadcast(call, local, count * sizeof(int64_t), sole));
  return call.kernels->assembleExclusiveIndices(
      static_cast<const int64_t*>(local), 1, size_t(count), size_t(sole),
      static_cast<const uint64_t*>(plan), static_cast<const uint64_t*>(ranges),
      static_cast<int64_t*>(global), vectors.fault, call.stream);
}

// Steps 6-9 of a CLT-k call that reads nothing back (its plan stays on the device): the counts
// are the host's (the leader's min(k, its range), nothing elsewhere), the leader's indices are
// broadcast, checked and assembled into a list zeroed first (a failed plan, the leader's claim of
// another count among its checks, assembles nothing), the values reduced and written, then the
// kernels settle the call: recvbuf = NaN and the residual kept unless the plan and every index
// passed.
scclResult_t finishUnreadLeaderCall(SparseCall& call, StreamExchange& exchange,
                                    StagedVectors& vectors, void* plan, const void* ranges,
                                    void* local, SettleWords settle, int sole, uint64_t sole_count,
                                    uint64_t leader_count) {
  const ReductionContext& ctx = *call.ctx;
  const int rank = ctx.comm->rank;
  call.outcome_on_device = true;  // the threshold statistic (the leader's k-th) stays there
  for (size_t r = 0; r < ctx.rank_counts.size(); ++r)
    ctx.rank_counts[r] = int(r) == sole ? leader_count : 0;
  call.k_local = rank == sole ? sole_count : 0;
  call.k_max = call.k_global = leader_count;
  call.threshold = ctx.estimator.currentThreshold();
  void* global = nullptr;
  SCCL_CHECK(call.device->buffer(DeviceStaging::kGlobalIndices,
                                 std::max<uint64_t>(1, leader_count) * 8, &global));
  if (leader_count > 0) {
    SCCL_CHECK(call.kernels->fillZero(global, leader_count * sizeof(int64_t), call.stream));
    SCCL_CHECK(broadcastLeaderIndices(call, exchange, vectors, local, leader_count, sole, plan,
                                      ranges, global));
  }
  SCCL_CHECK(reduceGlobalValues(call, exchange, vectors, static_cast<const int64_t*>(global),
                                leader_count, vectors.fault));
  PlanSettleArgs a;
  a.plan = static_cast<const uint64_t*>(plan);
  a.index_fault = vectors.fault;
  // The leader's statistic is its k-th magnitude (0 when it sends its whole range, which leaves
  // the edge word 0); the other ranks keep theirs.
  a.threshold = rank == sole && sole_count > 0 ? kSettleThresholdKth : kSettleThresholdKeep;
  a.threshold_dtype = ctx.acc_dtype;
  SCCL_CHECK(settleCall(call, vectors, settle, a));
  call.residual_updated = true;
  ctx.estimator.observe(leader_count, ctx.k_target);
  ctx.search.observeCounts(ctx.rank_counts.data(), ctx.iteration);
  return scclSuccess;
}

}  // namespace

bool residentGatherApplies(const ReductionContext& ctx) {
  const bool threshold_known =
      ctx.config.density_correction == "histogram" || ctx.estimator.thresholdBeforeData();
  if (std::strcmp(ctx.reduction.name, "gather") != 0 || !ctx.search.exclusive()) return false;
  // A sole selector (CLT-k's leader) with the exact top-k: its count is known before the data.
  if (ctx.search.soleSelector(ctx.iteration) >= 0) {
    return std::strcmp(ctx.estimator.name(), "topk") == 0 && ctx.config.max_density_slack < 0;
  }
  return threshold_known && !ctx.estimator.mayTrim();
}

scclResult_t runResidentGather(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors,
                               bool pass_candidates) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(ctx.comm->nranks);
  const int rank = ctx.comm->rank;
  const auto start = std::chrono::steady_clock::now();
  const double comm_us_before = call.time_comm_us;

  // Step 1. Without the density correction the threshold is known before the data (scaling,
  // fixed): a window of one bin from its pattern counts, per rank, exactly what it selects.
  // A sole selector (CLT-k's leader, exact top-k) knows its count before the data: min(k, its
  // range); its record holds that count alone (no bins) and the k-th magnitude it selects at.
  const int sole = ctx.search.soleSelector(ctx.iteration);
  // CLT-k on memory with a sticky fault word (device buffers) reads nothing back: its sizes are
  // known before the data, and the kernels settle the call (settled_call.h).
  const bool unread = sole >= 0 && vectors.async_fault != nullptr && !pass_candidates;
  const bool corrected = sole < 0 && ctx.config.density_correction == "histogram";
  const IndexRange range = ctx.search.rangeFor(rank, ctx.iteration);
  CorrectionWindow window;
  double fixed_threshold = 0;
  // What a rank selects as the sole selector, min(k, its range): every rank knows the leader's.
  const auto sole_count_of = [&](IndexRange r) {
    return r.empty() ? uint64_t{0} : std::min<uint64_t>(localTarget(ctx, r), r.size());
  };
  uint64_t sole_count = 0;    // this rank's
  uint64_t leader_count = 0;  // the leader's
  if (sole >= 0) {
    sole_count = sole_count_of(range);
    leader_count = sole_count_of(ctx.search.rangeFor(sole, ctx.iteration));
    window.bins = 0;
  } else if (corrected) {
    window = correctionWindow(ctx);
  } else {
    call.acc = vectors.acc;
    SCCL_CHECK(ctx.estimator.threshold(selectionQuery(call, range), &fixed_threshold));
    window.base = thresholdBits(ctx.acc_dtype, fixed_threshold);
    window.shift = 0;
    window.bins = 1;
  }
  // Candidates: this rank's pass keeps them where the threshold is known before the data or the
  // correction counts (a non-empty range, no sole selector). With the correction the pass counts
  // from the floor edge up only (the same on every rank: the window is), so the ranks decide
  // together after the bins' sum whether that was enough.
  const bool keep = pass_candidates && sole < 0 && range.size() > 0;
  const size_t counted_from = pass_candidates && corrected ? window.floor_edge : 0;
  size_t own_counted_from = counted_from;  // where this rank's own bins start (0: all of them)
  const size_t record_words = kGatherRecordHeaderWords + window.bins + 1;
  const size_t record_bytes = record_words * sizeof(uint64_t);
  // One buffer holds every rank's range (2 n words) and then this rank's record, so that one
  // upload sets both: the ranges and the record's header words.
  void *upload = nullptr, *records = nullptr, *plan = nullptr;
  SCCL_CHECK(
      device.buffer(DeviceStaging::kRecord, 2 * n * sizeof(uint64_t) + record_bytes, &upload));
  SCCL_CHECK(device.buffer(DeviceStaging::kRecords, record_bytes * n, &records));
  // The plan, then two words of the two-step exchange's edge (edge, count over the ranks), then
  // the settle words of a call that reads nothing back.
  const size_t plan_words = gatherPlanWords(n) + 2;
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, plan_words * sizeof(uint64_t) + kSettleWordsBytes,
                           &plan));
  void* settle_at = static_cast<uint64_t*>(plan) + plan_words;
  const SettleWords settle = settleWordsAt(settle_at);
  uint64_t* ranges = static_cast<uint64_t*>(upload);
  uint64_t* record_words_d = ranges + 2 * n;
  void* record = record_words_d;
  // The two-step exchange (the host reduction's collectives): a sole selector's count rides in
  // its 32-byte header, and its k-th magnitude stays in this rank's plan words.
  // With candidates the bins' sum decides before the headers go (the host reduction's order).
  const bool two_step = pass_candidates || exchange.twoStep(int(n));
  const bool count_in_record = sole >= 0 && !two_step;
  uint64_t* edge_words = static_cast<uint64_t*>(plan) + gatherPlanWords(n);
  const size_t upload_words = 2 * n + kGatherRecordHeaderWords + (count_in_record ? 1 : 0);
  // From page-locked memory the upload is a true asynchronous copy; the buffer is reused only
  // after the call's wait, when the copy is done. A call without a wait uploads from pageable
  // memory, whose copy is staged before toDevice returns.
  std::vector<uint64_t> pageable;
  uint64_t* words = nullptr;
  if (unread) {
    pageable.resize(upload_words);
    words = pageable.data();
  } else {
    void* upload_host = nullptr;
    SCCL_CHECK(device.hostBuffer(DeviceStaging::kUploadHost, upload_words * sizeof(uint64_t),
                                 &upload_host));
    words = static_cast<uint64_t*>(upload_host);
  }
  std::fill(words, words + upload_words, uint64_t{0});
  writeCallRanges(ctx, words);
  words[2 * n + kRecordFingerprint] = ctx.fingerprint;
  words[2 * n + kRecordSequence] = ctx.iteration;  // non-finite count and reserved word: 0
  if (count_in_record) words[2 * n + kGatherRecordHeaderWords] = sole_count;
  if (sole >= 0 && two_step) words[2 * n + kHeaderCount] = sole_count;
  SCCL_CHECK(device.toDevice(upload, words, upload_words * sizeof(uint64_t)));

  // Step 2.
  uint64_t* bins = record_words_d + kGatherRecordHeaderWords;
  AccumulateSelectArgs a = accumulatePass(call, vectors, record_words_d + kRecordNonFinite);
  const size_t element = accElementSize(ctx);
  size_t room = 0, ncandidates = 0;
  void *candidate_indices = nullptr, *candidate_values = nullptr;
  if (sole >= 0) {
    // The pass only accumulates; the count is the uploaded one.
  } else if (range.size() > 0) {
    a.begin = range.begin;
    a.end = range.end;
    a.base_bits = window.base + (uint64_t(counted_from) << window.shift);
    a.shift = window.shift;
    a.bins = window.bins - counted_from;
    a.counts = bins + counted_from;
    if (counted_from > 0)
      SCCL_CHECK(kernels.fillZero(bins, counted_from * sizeof(uint64_t), stream));
    if (keep) {
      // About what the last call needed (gather_selection.h's rules); an overflow is still counted
      // exactly, the range selected again, and the room grown for the next call.
      const uint64_t k_local = localTarget(ctx, range);
      room = corrected ? candidateRoom(range, 8 * k_local) : likelySelection(ctx, range, k_local);
      room = std::max(room, std::min<size_t>(ctx.candidate_room, range.size()));
      SCCL_CHECK(device.buffer(DeviceStaging::kCandidateIndices, room * sizeof(int64_t),
                               &candidate_indices));
      SCCL_CHECK(device.buffer(DeviceStaging::kCandidateValues, room * element, &candidate_values));
      a.floor = corrected ? windowEdge(window, counted_from, ctx.acc_dtype) : fixed_threshold;
      a.idx = static_cast<int64_t*>(candidate_indices);
      a.val = candidate_values;
      a.capacity = room;
      a.ncandidates = &ncandidates;
    }
  } else {
    SCCL_CHECK(kernels.fillZero(bins, (window.bins + 1) * sizeof(uint64_t), stream));
  }
  SCCL_CHECK(kernels.accumulateSelect(a, stream));
  call.acc = vectors.acc;
  // The candidates hold the selection unless more qualified than the room (counted exactly all
  // the same): the range is then selected again, and the next call has room for this many.
  bool candidates_hold = keep && ncandidates <= room;
  if (keep) {
    const size_t wanted = ncandidates + ncandidates / 4;
    ctx.candidate_room = ncandidates <= room ? std::max(ctx.candidate_room, room)
                         : corrected         ? candidateRoom(range, wanted)
                                             : std::min<size_t>(range.size(), wanted);
  }
  // The sole selector selects now, before the exchange, so its record carries the k-th
  // magnitude (the statistics' threshold) to the plan; it is used only if the plan passes.
  void* local = nullptr;
  if (sole >= 0) {
    SCCL_CHECK(device.buffer(DeviceStaging::kLocalIndices, std::max<uint64_t>(1, leader_count) * 8,
                             &local));
    if (sole_count > 0 && sole_count < range.size()) {
      SCCL_CHECK(kernels.selectTopK(vectors.acc, ctx.acc_dtype, range.begin, range.end,
                                    size_t(sole_count), static_cast<int64_t*>(local),
                                    two_step ? edge_words : record_words_d + kRecordReserved,
                                    stream));
    } else if (sole_count > 0) {  // the whole range (threshold 0: the reserved word stays 0)
      SCCL_CHECK(kernels.selectAbovePadded(vectors.acc, ctx.acc_dtype, range.begin, range.end, 0.0,
                                           size_t(sole_count), static_cast<int64_t*>(local),
                                           size_t(sole_count), stream));
    }
  }

  // Steps 3-5.
  if (!two_step) SCCL_CHECK(exchange.allGather(call, record, records, record_bytes));
  GatherPlanParams params = callPlanParams(ctx);
  params.bins = window.bins;
  params.centre_edge = edgeAtOrBelow(window, ctx.estimator.currentThreshold(), ctx.acc_dtype);
  params.nearest_edge = corrected ? 1 : 0;
  if (sole >= 0) {
    // The leader's count sizes the index broadcast and every receiver's list: a claim of another
    // fails the plan on every rank.
    params.sole = uint64_t(sole);
    params.sole_count = leader_count;
  }
  if (two_step) {
    // The host reduction's collectives: the bins summed, then the headers with each rank's
    // count at the edge.
    uint64_t* summed = static_cast<uint64_t*>(records);
    void* headers = nullptr;
    SCCL_CHECK(device.buffer(DeviceStaging::kHeaders,
                             n * kGatherRecordHeaderWords * sizeof(uint64_t), &headers));
    if (sole < 0) {  // a sole selector has no bins: its count was uploaded
      SCCL_CHECK(exchange.allReduceSum(call, bins, summed, window.bins + 1, scclUint64));
      if (counted_from > 0) {
        bool enough = false;
        SCCL_CHECK(
            countedEnough(call, summed + counted_from, window.bins + 1 - counted_from, &enough));
        if (!enough) {
          // Fewer than k from the floor edge up on all ranks together: the edge nearest k may lie
          // lower, so every rank counts the whole window over its range and the bins are summed
          // again (the result is the same as counting it all at first). The threshold may then
          // lie below the candidates' floor.
          if (range.size() > 0) {
            SCCL_CHECK(kernels.absBitHistogram(vectors.acc, ctx.acc_dtype, range.begin, range.end,
                                               window.base, window.shift, window.bins, bins,
                                               stream));
          }
          SCCL_CHECK(exchange.allReduceSum(call, bins, summed, window.bins + 1, scclUint64));
          candidates_hold = false;
          own_counted_from = 0;
        }
      }
      SCCL_CHECK(kernels.planEdge(summed, bins, params, edge_words, record_words_d + kHeaderCount,
                                  stream));
    }
    SCCL_CHECK(
        exchange.allGather(call, record, headers, kGatherRecordHeaderWords * sizeof(uint64_t)));
    SCCL_CHECK(kernels.planHeaders(static_cast<const uint64_t*>(headers), params,
                                   static_cast<const uint64_t*>(ranges), vectors.fault, edge_words,
                                   static_cast<uint64_t*>(plan), stream));
  } else {
    SCCL_CHECK(kernels.planGather(static_cast<const uint64_t*>(records), params,
                                  static_cast<const uint64_t*>(ranges), vectors.fault,
                                  static_cast<uint64_t*>(plan), stream));
  }
  if (unread) {
    SCCL_CHECK(startSettledTotals(call, settle_at, settle));
    call.time_select_us += microsecondsSince(start) - (call.time_comm_us - comm_us_before);
    return finishUnreadLeaderCall(call, exchange, vectors, plan, ranges, local, settle, sole,
                                  sole_count, leader_count);
  }
  const uint64_t* p = nullptr;
  SCCL_CHECK(readPlan(call, plan, n, &p));
  call.time_select_us += microsecondsSince(start) - (call.time_comm_us - comm_us_before);
  bool handled = false;
  SCCL_CHECK(applyPlanStatus(call, p, &handled));
  if (handled) return scclSuccess;  // discarded for non-finite values
  if (sole >= 0) {
    // The host reduction's: the leader's k-th value (0 for its whole range, +inf for none);
    // the others keep the estimator's current one.
    if (rank == sole) {
      const double kth = magnitudeValue(p[kPlanEdge], ctx.acc_dtype);
      call.threshold = sole_count == 0              ? std::numeric_limits<double>::infinity()
                       : sole_count == range.size() ? 0.0
                                                    : kth;
      ctx.estimator.adoptThreshold(call.threshold);
    } else {
      call.threshold = ctx.estimator.currentThreshold();
    }
  } else if (corrected) {
    call.threshold = windowEdge(window, size_t(p[kPlanEdge]), ctx.acc_dtype);
    ctx.estimator.adoptThreshold(call.threshold);
  } else {
    call.threshold = fixed_threshold;
  }
  adoptPlanCounts(call, p);
  const uint64_t max_k = call.k_max;
  const uint64_t k_global = call.k_global;

  // Steps 6-8.
  void *gathered = nullptr, *global = nullptr;
  if (sole < 0) {
    SCCL_CHECK(
        device.buffer(DeviceStaging::kLocalIndices, std::max<uint64_t>(1, max_k) * 8, &local));
  }
  SCCL_CHECK(device.buffer(DeviceStaging::kGatheredIndices, std::max<uint64_t>(1, max_k * n) * 8,
                           &gathered));
  SCCL_CHECK(
      device.buffer(DeviceStaging::kGlobalIndices, std::max<uint64_t>(1, k_global) * 8, &global));
  if (sole >= 0 && max_k > 0) {
    SCCL_CHECK(
        broadcastLeaderIndices(call, exchange, vectors, local, max_k, sole, plan, ranges, global));
  } else if (max_k > 0) {
    const auto select_start = std::chrono::steady_clock::now();
    // This rank's count came from its own bins, which start at own_counted_from: the selection
    // never goes below that edge, even where peers' bins put the chosen edge lower (honest bins
    // cannot: at least k lie above it), so the count and the selection always agree.
    const double select_at =
        own_counted_from > 0
            ? std::max(call.threshold, windowEdge(window, own_counted_from, ctx.acc_dtype))
            : call.threshold;
    if (call.k_local > 0 && call.k_local == params.cap) {
      // max_density_slack: a rank counted past its cap sends its cap largest entries (ties to
      // the lowest indices, the host reduction's trim). At least cap entries lie at or above
      // select_at, so these are the range's top cap; the k-th pattern goes to the record's
      // reserved word, which only a sole selector's plan reads.
      uint64_t* kth_bits = record_words_d + kRecordReserved;
      if (candidates_hold) {
        SCCL_CHECK(kernels.selectTopKCandidates(
            static_cast<const int64_t*>(candidate_indices), candidate_values, ctx.acc_dtype,
            ncandidates, size_t(call.k_local), static_cast<int64_t*>(local), kth_bits, stream));
      } else {
        SCCL_CHECK(kernels.selectTopK(vectors.acc, ctx.acc_dtype, range.begin, range.end,
                                      size_t(call.k_local), static_cast<int64_t*>(local), kth_bits,
                                      stream));
      }
      if (call.k_local < max_k) {
        SCCL_CHECK(kernels.fillZero(static_cast<int64_t*>(local) + call.k_local,
                                    (max_k - call.k_local) * sizeof(int64_t), stream));
      }
    } else if (candidates_hold) {
      SCCL_CHECK(kernels.selectCandidatesPadded(
          static_cast<const int64_t*>(candidate_indices), candidate_values, ctx.acc_dtype,
          ncandidates, select_at, size_t(call.k_local), static_cast<int64_t*>(local), size_t(max_k),
          stream));
    } else {
      SCCL_CHECK(kernels.selectAbovePadded(
          vectors.acc, ctx.acc_dtype, range.begin, std::max(range.begin, range.end), select_at,
          size_t(call.k_local), static_cast<int64_t*>(local), size_t(max_k), stream));
    }
    call.time_select_us += microsecondsSince(select_start);
    SCCL_CHECK(exchange.allGather(call, local, gathered, max_k * sizeof(int64_t)));
    SCCL_CHECK(kernels.assembleExclusiveIndices(
        static_cast<const int64_t*>(gathered), n, size_t(max_k), 0,
        static_cast<const uint64_t*>(plan), static_cast<const uint64_t*>(ranges),
        static_cast<int64_t*>(global), vectors.fault, stream));
  }
  SCCL_CHECK(reduceGlobalValues(call, exchange, vectors, static_cast<const int64_t*>(global),
                                k_global, vectors.fault));
  call.residual_updated = true;
  ctx.estimator.observe(k_global, ctx.k_target);
  ctx.search.observeCounts(ctx.rank_counts.data(), ctx.iteration);
  return scclSuccess;
}

scclResult_t residentLeaderStats(const ReductionContext& ctx, DeviceStaging& staging,
                                 scclSparseStats_t* stats) {
  const size_t n = size_t(ctx.comm->nranks);
  const size_t plan_words = gatherPlanWords(n) + 2;
  void* plan = nullptr;
  SCCL_CHECK(staging.buffer(DeviceStaging::kPlan, plan_words * sizeof(uint64_t) + kSettleWordsBytes,
                            &plan));
  SettledRead read;
  SCCL_CHECK(readSettled(ctx, staging, plan, gatherPlanWords(n),
                         static_cast<uint64_t*>(plan) + plan_words, &read));
  if (!read.any) return scclSuccess;
  scclSparseStats_t& s = *stats;
  // The bytes and call number are the host's; the counts are those of the last completed call
  // (a discarded one keeps them, as on the host), whose leader selected min(k, its range). The
  // leader's k-th magnitude is the device's: adopted as the host run adopts it at each call this
  // rank led, and the statistic of every call since (the host's estimator threshold).
  s.nonFinite = read.plan[kPlanOwnNonFinite];
  if (read.totals.completed > 0) {
    const int leader = ctx.search.soleSelector(read.last_completed);
    const IndexRange range = ctx.search.rangeFor(leader, read.last_completed);
    const uint64_t k =
        range.empty() ? 0 : std::min<uint64_t>(localTarget(ctx, range), range.size());
    for (size_t r = 0; r < n; ++r) ctx.rank_counts[r] = int(r) == leader ? k : 0;
    s.kLocal = ctx.rank_counts[size_t(ctx.comm->rank)];
    s.kGlobal = s.kMax = k;
  }
  if (!std::isnan(read.totals.last_threshold))
    ctx.estimator.adoptThreshold(read.totals.last_threshold);
  s.threshold = ctx.estimator.currentThreshold();
  s.meanAbsDensityError = read.totals.completed == 0
                              ? 0.0
                              : read.totals.sum_abs_density_error / double(read.totals.completed);
  return scclSuccess;
}

scclResult_t restoreAfterFault(const SparseCall& call, StagedVectors& vectors) {
  const ReductionContext& ctx = *call.ctx;
  // After the swap vectors.residual is the call's accumulator and vectors.acc the residual it
  // started from (without error feedback there is no residual: only the fault is published).
  const size_t bytes = ctx.config.error_feedback ? ctx.count * accElementSize(ctx) : 0;
  return call.kernels->copyOnFault(vectors.residual, vectors.acc, bytes, vectors.fault,
                                   vectors.published_fault, call.stream);
}

}  // namespace sccl
