// The device-resident union call: the gather reduction of gather_reduction.cc for Top-k, where
// every rank selects its exact top-k over the whole vector (a search space every rank shares),
// with every per-index step on the kernels' side, for device buffers. The host reads back one
// plan per call, which sizes the value all-reduce; indices and values never cross to it.
//
// Paper: the Top-k baseline of MiCRO and ExDyna (D. Yoon and S. Oh, "MiCRO: Near-Zero Cost
// Gradient Sparsification for Scaling and Accelerating Distributed DNN Training", HiPC 2023),
// after A. F. Aji and K. Heafield, "Sparse Communication for Distributed Gradient Descent"
// (EMNLP 2017); reference code kljp/micro (its TopKReducer: index all-gather, value
// all-reduce at the union).
// Steps of one call on rank r (d_ = the kernels' memory, all on the call's stream):
//  1. d_ranges = every rank's range and r's slot header = [fingerprint, call number, 0, 0, k_r],
//     k_r = min(k, r's range), in one upload of 16 n + 40 bytes;
//  2. d_acc = d_residual + gradient, the non-finite count into the slot (accumulate);
//  3. selectTopK: r's exact top-k (ties to the lowest indices) ascending into the slot, the k-th
//     magnitude pattern into its header (no sort of the vector: a radix select on the CUDA
//     backend);
//  4. all-gather the slots (40 + 8 K bytes each, K = the largest k_r);
//  5. planUnion (kernels/shared/union_plan.h): every slot's header checked (call, config, count
//     within its range and the slot), non-finite values, every slice checked (inside its rank's
//     range, strictly ascending), the union of the slices sorted without repeats into d_global
//     and its length u;
//  6. the plan read back (64 + 16 n bytes) and the one wait: the host applies a failed check or
//     the non-finite policy (nothing written yet), adopts the threshold, observes the counts;
//  7. gatherAndZero of d_acc at the u indices, all-reduce of the u values (rank order), divided
//     by n for scclAvg; writeDense of recvbuf;
//  8. the caller swaps residual and accumulator.
// Host read-backs: one (the plan). Waits: one with collectives on the stream (NCCL); over host
// transports one more per collective (StagedExchange): three.
// Bytes on the wire per rank: slots (n-1) (40 + 8 K) in, 40 + 8 K out, where the host path
// all-gathers a 32-byte header and then the indices padded to the largest count (the same
// entries: K is that count); values 2 (n-1)/n u 4 each way, as the host path. The selections,
// values, outputs, residuals and thresholds are the host path's bit for bit, and its errors come
// back from the call as the host path's do.
#include "algorithms/resident_union.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/plan_readback.h"
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/error.h"
#include "estimators/magnitude_window.h"
#include "kernels/shared/magnitude_bits.h"
#include "kernels/shared/union_plan.h"
#include "sparsifier/sparsifier.h"

namespace sccl {
bool residentUnionApplies(const scclSparsifier& sp) {
  const bool topk = std::strcmp(sp.estimator->name(), "topk") == 0;
  return std::strcmp(sp.reduction->name, "gather") == 0 && (topk || !sp.estimator->mayTrim()) &&
         sp.config.density_correction != "histogram" &&
         (!sp.search->exclusive() || sp.comm->nranks == 1) &&
         sp.search->soleSelector(sp.iteration) < 0 && sp.config.max_density_slack < 0;
}

namespace {

// What the call knows of the counts after its selection's threshold: every rank's count, the
// slot capacity, this rank's count, and the threshold used.
struct UnionCounts {
  uint64_t capacity = 1;
  uint64_t own = 0;
  double threshold = 0;
};

// Steps 1-3 when the counts follow from the data (a threshold): the accumulation with this
// rank's count at the threshold (a one-bin window from its pattern, as the resident gather's),
// one all-gather of 48-byte records, the plan of every rank's count (the resident gather's
// planGather with edge 0), read back (the first of two). Sets *counts, or fails as the host.
scclResult_t countAtThreshold(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors,
                              IndexRange range, uint64_t* ranges, UnionCounts* counts) {
  scclSparsifier& sp = *call.sp;
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(sp.comm->nranks);
  constexpr size_t kBins = 1;
  const size_t record_words = kGatherRecordHeaderWords + kBins + 1;
  void *record = nullptr, *records = nullptr, *plan = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kHeaders, record_words * sizeof(uint64_t), &record));
  SCCL_CHECK(device.buffer(DeviceStaging::kRecords, n * record_words * sizeof(uint64_t), &records));
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, gatherPlanWords(n) * sizeof(uint64_t), &plan));
  uint64_t* r = static_cast<uint64_t*>(record);
  const uint64_t header[kGatherRecordHeaderWords] = {sp.fingerprint, sp.iteration, 0, 0};
  SCCL_CHECK(device.toDevice(record, header, sizeof(header)));
  call.acc = vectors.acc;
  const void* residual = sp.config.error_feedback ? vectors.residual : nullptr;
  double threshold = 0;
  AccumulateSelectArgs a;
  a.acc = vectors.acc;
  a.residual = residual;
  a.acc_dtype = sp.acc_dtype;
  a.grad = call.sendbuf;
  a.grad_dtype = sp.dtype;
  a.count = sp.count;
  a.nonfinite = r + kRecordNonFinite;
  if (sp.estimator->thresholdBeforeData() && range.size() > 0) {
    // One pass: accumulate and count at the threshold (hard threshold, scaling).
    SCCL_CHECK(sp.estimator->threshold(selectionQuery(call, range), &threshold));
    a.begin = range.begin;
    a.end = range.end;
    a.base_bits = thresholdBits(sp.acc_dtype, threshold);
    a.bins = kBins;
    a.counts = r + kGatherRecordHeaderWords;
    SCCL_CHECK(kernels.accumulateSelect(a, stream));
  } else {
    SCCL_CHECK(kernels.accumulateSelect(a, stream));
    if (range.size() > 0) {
      // The estimator reads the accumulated range (SIDCo's fits, through its own read-backs).
      SCCL_CHECK(sp.estimator->threshold(selectionQuery(call, range), &threshold));
      SCCL_CHECK(kernels.absBitHistogram(vectors.acc, sp.acc_dtype, range.begin, range.end,
                                         thresholdBits(sp.acc_dtype, threshold), 0, kBins,
                                         r + kGatherRecordHeaderWords, stream));
    }
  }
  if (range.size() == 0) {
    threshold = sp.estimator->currentThreshold();
    SCCL_CHECK(kernels.fillZero(r + kGatherRecordHeaderWords, (kBins + 1) * 8, stream));
  }
  SCCL_CHECK(exchange.allGather(call, record, records, record_words * sizeof(uint64_t)));
  GatherPlanParams params = callPlanParams(sp);
  params.bins = kBins;
  params.nearest_edge = 0;  // edge 0: every counted entry is selected
  SCCL_CHECK(kernels.planGather(static_cast<const uint64_t*>(records), params, ranges,
                                vectors.fault, static_cast<uint64_t*>(plan), stream));
  const uint64_t* p = nullptr;
  SCCL_CHECK(readPlan(call, plan, n, &p));
  bool handled = false;
  SCCL_CHECK(applyPlanStatus(call, p, &handled));
  if (handled) return scclSuccess;  // discarded: the caller sees call.step_discarded
  counts->own = p[kGatherPlanHeaderWords + 2 * size_t(sp.comm->rank)];
  counts->capacity = std::max<uint64_t>(1, p[kPlanMaxK]);
  counts->threshold = threshold;
  return scclSuccess;
}

}  // namespace

scclResult_t runResidentUnion(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors) {
  scclSparsifier& sp = *call.sp;
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(sp.comm->nranks);
  const int rank = sp.comm->rank;
  const auto start = std::chrono::steady_clock::now();
  const bool topk = std::strcmp(sp.estimator->name(), "topk") == 0;

  // Step 1. Top-k: every rank's count is known before the data, min(k, its range), and the slot
  // holds the largest of them. A threshold: the counts come from the data (countAtThreshold).
  const auto count_of = [&](IndexRange r) {
    return r.empty() ? uint64_t{0} : std::min<uint64_t>(localTarget(sp, r), r.size());
  };
  const IndexRange range = sp.search->rangeFor(rank, sp.iteration);
  void* upload = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kRecord, 2 * n * sizeof(uint64_t), &upload));
  uint64_t* ranges = static_cast<uint64_t*>(upload);
  void* upload_host = nullptr;
  SCCL_CHECK(device.hostBuffer(DeviceStaging::kUploadHost,
                               (2 * n + kUnionSlotHeaderWords) * sizeof(uint64_t), &upload_host));
  uint64_t* words = static_cast<uint64_t*>(upload_host);
  writeCallRanges(sp, words);
  SCCL_CHECK(device.toDevice(upload, words, 2 * n * sizeof(uint64_t)));
  UnionCounts counts;
  if (topk) {
    counts.own = count_of(range);
    for (size_t r = 0; r < n; ++r)
      counts.capacity =
          std::max(counts.capacity, count_of(sp.search->rangeFor(int(r), sp.iteration)));
  } else {
    SCCL_CHECK(countAtThreshold(call, exchange, vectors, range, ranges, &counts));
    if (call.step_discarded) return scclSuccess;
  }
  const uint64_t capacity = counts.capacity;
  const uint64_t own_count = counts.own;
  const size_t slot_words = unionSlotWords(capacity);
  void *slot_memory = nullptr, *slots = nullptr, *plan = nullptr, *global = nullptr;
  SCCL_CHECK(
      device.buffer(DeviceStaging::kLocalIndices, slot_words * sizeof(uint64_t), &slot_memory));
  SCCL_CHECK(
      device.buffer(DeviceStaging::kGatheredIndices, n * slot_words * sizeof(uint64_t), &slots));
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, gatherPlanWords(n) * sizeof(uint64_t), &plan));
  SCCL_CHECK(device.buffer(DeviceStaging::kGlobalIndices, n * capacity * sizeof(int64_t), &global));
  uint64_t* slot = static_cast<uint64_t*>(slot_memory);
  uint64_t* header = words + 2 * n;
  std::fill(header, header + kUnionSlotHeaderWords, uint64_t{0});
  header[kRecordFingerprint] = sp.fingerprint;
  header[kRecordSequence] = sp.iteration;  // non-finite count and k-th pattern: 0 (top-k: below)
  header[kUnionSlotCount] = own_count;
  SCCL_CHECK(device.toDevice(slot, header, kUnionSlotHeaderWords * sizeof(uint64_t)));

  // Steps 2-3. The padding past this rank's count is zeroed or -1: every byte sent is defined.
  int64_t* indices = reinterpret_cast<int64_t*>(slot + kUnionSlotHeaderWords);
  if (topk) {
    SCCL_CHECK(kernels.accumulate(
        vectors.acc, sp.config.error_feedback ? vectors.residual : nullptr, sp.acc_dtype,
        call.sendbuf, sp.dtype, sp.count, slot + kRecordNonFinite, stream));
    call.acc = vectors.acc;
    if (own_count > 0 && own_count < range.size()) {
      SCCL_CHECK(kernels.selectTopK(vectors.acc, sp.acc_dtype, range.begin, range.end,
                                    size_t(own_count), indices, slot + kRecordReserved, stream));
    } else if (own_count > 0) {  // the whole range (threshold 0: the k-th pattern stays 0)
      SCCL_CHECK(kernels.selectAbovePadded(vectors.acc, sp.acc_dtype, range.begin, range.end, 0.0,
                                           size_t(own_count), indices, size_t(own_count), stream));
    }
    if (own_count < capacity) {
      SCCL_CHECK(
          kernels.fillZero(indices + own_count, (capacity - own_count) * sizeof(int64_t), stream));
    }
  } else {
    SCCL_CHECK(kernels.selectAbovePadded(vectors.acc, sp.acc_dtype, range.begin,
                                         std::max(range.begin, range.end), counts.threshold,
                                         size_t(own_count), indices, size_t(capacity), stream));
  }

  // Steps 4-6.
  SCCL_CHECK(exchange.allGather(call, slot, slots, slot_words * sizeof(uint64_t)));
  const GatherPlanParams params = callPlanParams(sp);
  SCCL_CHECK(kernels.planUnion(static_cast<const uint64_t*>(slots), params, size_t(capacity),
                               ranges, static_cast<int64_t*>(global), static_cast<uint64_t*>(plan),
                               stream));
  const uint64_t* p = nullptr;
  SCCL_CHECK(readPlan(call, plan, n, &p));
  call.time_select_us += microsecondsSince(start);
  bool handled = false;
  SCCL_CHECK(applyPlanStatus(call, p, &handled));
  if (handled) return scclSuccess;  // discarded for non-finite values
  if (topk) {
    // The host reduction's threshold: the k-th value (0 for the whole range, +inf for none).
    call.threshold = own_count == 0              ? std::numeric_limits<double>::infinity()
                     : own_count == range.size() ? 0.0
                                                 : magnitudeValue(p[kPlanEdge], sp.acc_dtype);
    sp.estimator->adoptThreshold(call.threshold);
  } else {
    call.threshold = counts.threshold;
  }
  const uint64_t k_global = p[kPlanKGlobal];
  for (size_t r = 0; r < n; ++r) sp.rank_counts[r] = p[kGatherPlanHeaderWords + 2 * r];
  call.k_local = sp.rank_counts[size_t(rank)];
  call.k_max = p[kPlanMaxK];
  call.k_global = k_global;

  // Step 7.
  void* values = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kValues,
                           std::max<uint64_t>(1, k_global) * accElementSize(sp), &values));
  const int64_t* idx = static_cast<const int64_t*>(global);
  SCCL_CHECK(kernels.gatherAndZero(vectors.acc, sp.acc_dtype, idx, k_global, values, stream));
  SCCL_CHECK(exchange.allReduceSum(call, values, values, k_global, sp.acc_dtype));
  if (call.op == scclAvg) SCCL_CHECK(device.divideByRanks(values, k_global, sp.acc_dtype, int(n)));
  SCCL_CHECK(kernels.writeDense(call.recvbuf, sp.dtype, sp.count, idx, values, sp.acc_dtype,
                                k_global, 1.0, stream));
  call.residual_updated = true;
  sp.estimator->observe(k_global, sp.k_target);
  sp.search->observeCounts(sp.rank_counts.data(), sp.iteration);
  return scclSuccess;
}

}  // namespace sccl
