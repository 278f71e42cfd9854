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
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/error.h"
#include "estimators/magnitude_window.h"
#include "kernels/shared/union_plan.h"
#include "sparsifier/sparsifier.h"

namespace sccl {
namespace {

double microsecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

// Step 6's failed checks, with the host reduction's codes.
scclResult_t unionFailure(const scclSparsifier& sp, const uint64_t* plan) {
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  switch (plan[kPlanStatus]) {
    case kPlanMismatch:
      return fail(scclInvalidUsage,
                  "sparse all-reduce: rank %llu is at call %llu of a sparsifier with fingerprint "
                  "%016llx, rank %d at call %llu of %016llx (mismatched calls or configs)",
                  u(plan[kPlanRank]), u(plan[kPlanDetailA]), u(plan[kPlanDetailB]), sp.comm->rank,
                  u(sp.iteration), u(sp.fingerprint));
    case kPlanTooMany:
      return fail(scclRemoteError, "rank %llu claims %llu selected entries; at most %llu allowed",
                  u(plan[kPlanRank]), u(plan[kPlanDetailA]), u(plan[kPlanDetailB]));
    case kPlanBadIndex:
      return fail(scclRemoteError,
                  "rank %llu sent an index outside its range or out of order; nothing was "
                  "written",
                  u(plan[kPlanRank]));
    default:
      return fail(scclInternalError, "resident union: plan status %llu", u(plan[kPlanStatus]));
  }
}

}  // namespace

bool residentUnionApplies(const scclSparsifier& sp) {
  return std::strcmp(sp.reduction->name, "gather") == 0 &&
         std::strcmp(sp.estimator->name(), "topk") == 0 &&
         (!sp.search->exclusive() || sp.comm->nranks == 1) &&
         sp.search->soleSelector(sp.iteration) < 0 && sp.config.max_density_slack < 0;
}

scclResult_t runResidentUnion(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors) {
  scclSparsifier& sp = *call.sp;
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(sp.comm->nranks);
  const int rank = sp.comm->rank;
  const auto start = std::chrono::steady_clock::now();

  // Step 1. Every rank's count is known before the data: min(k, its range); the slot holds the
  // largest of them.
  const auto count_of = [&](IndexRange r) {
    return r.empty() ? uint64_t{0} : std::min<uint64_t>(localTarget(sp, r), r.size());
  };
  const IndexRange range = sp.search->rangeFor(rank, sp.iteration);
  const uint64_t own_count = count_of(range);
  uint64_t capacity = 1;
  for (size_t r = 0; r < n; ++r)
    capacity = std::max(capacity, count_of(sp.search->rangeFor(int(r), sp.iteration)));
  const size_t slot_words = unionSlotWords(capacity);
  void *upload = nullptr, *slots = nullptr, *plan = nullptr, *global = nullptr;
  SCCL_CHECK(
      device.buffer(DeviceStaging::kRecord, (2 * n + slot_words) * sizeof(uint64_t), &upload));
  SCCL_CHECK(device.buffer(DeviceStaging::kRecords, n * slot_words * sizeof(uint64_t), &slots));
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, gatherPlanWords(n) * sizeof(uint64_t), &plan));
  SCCL_CHECK(device.buffer(DeviceStaging::kGlobalIndices, n * capacity * sizeof(int64_t), &global));
  uint64_t* ranges = static_cast<uint64_t*>(upload);
  uint64_t* slot = ranges + 2 * n;
  const size_t upload_words = 2 * n + kUnionSlotHeaderWords;
  void* upload_host = nullptr;
  SCCL_CHECK(
      device.hostBuffer(DeviceStaging::kUploadHost, upload_words * sizeof(uint64_t), &upload_host));
  uint64_t* words = static_cast<uint64_t*>(upload_host);
  std::fill(words, words + upload_words, uint64_t{0});
  for (size_t r = 0; r < n; ++r) {
    const IndexRange allowed = sp.search->rangeFor(int(r), sp.iteration);
    words[2 * r] = allowed.begin;
    words[2 * r + 1] = allowed.end;
  }
  words[2 * n + kRecordFingerprint] = sp.fingerprint;
  words[2 * n + kRecordSequence] = sp.iteration;  // non-finite count and k-th pattern: 0
  words[2 * n + kUnionSlotCount] = own_count;
  SCCL_CHECK(device.toDevice(upload, words, upload_words * sizeof(uint64_t)));

  // Steps 2-3. The padding past this rank's count is zeroed: every byte sent is defined.
  int64_t* indices = reinterpret_cast<int64_t*>(slot + kUnionSlotHeaderWords);
  SCCL_CHECK(kernels.accumulate(vectors.acc, sp.config.error_feedback ? vectors.residual : nullptr,
                                sp.acc_dtype, call.sendbuf, sp.dtype, sp.count,
                                slot + kRecordNonFinite, stream));
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

  // Steps 4-6.
  SCCL_CHECK(exchange.allGather(call, slot, slots, slot_words * sizeof(uint64_t)));
  GatherPlanParams params;
  params.fingerprint = sp.fingerprint;
  params.sequence = sp.iteration;
  params.k_target = sp.k_target;
  params.nranks = n;
  params.self = uint64_t(rank);
  SCCL_CHECK(kernels.planUnion(static_cast<const uint64_t*>(slots), params, size_t(capacity),
                               ranges, static_cast<int64_t*>(global), static_cast<uint64_t*>(plan),
                               stream));
  void* plan_host = nullptr;
  const size_t plan_bytes = gatherPlanWords(n) * sizeof(uint64_t);
  SCCL_CHECK(device.hostBuffer(DeviceStaging::kPlanHost, plan_bytes, &plan_host));
  SCCL_CHECK(device.readBack(plan_host, plan, plan_bytes));
  SCCL_CHECK(device.synchronize());
  const uint64_t* p = static_cast<const uint64_t*>(plan_host);
  call.time_select_us += microsecondsSince(start);
  if (p[kPlanStatus] == kPlanNonFinite) {
    std::vector<CallHeader> headers(n, CallHeader{0, 0, sp.fingerprint, sp.iteration});
    headers[p[kPlanRank]].nonfinite = p[kPlanDetailA];
    call.nonfinite_local = p[kPlanOwnNonFinite];
    return applyNonFinitePolicy(call, headers);
  }
  if (p[kPlanStatus] != kPlanOk) return unionFailure(sp, p);
  // The host reduction's threshold: the k-th value (0 for the whole range, +inf for none).
  call.threshold = own_count == 0              ? std::numeric_limits<double>::infinity()
                   : own_count == range.size() ? 0.0
                                               : magnitudeValue(p[kPlanEdge], sp.acc_dtype);
  sp.estimator->adoptThreshold(call.threshold);
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
