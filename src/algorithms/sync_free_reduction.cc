// sync_free: the gather reduction's data path with every message size fixed at creation, so that
// no step needs a count from another rank before it can be issued. On a GPU this is the form that
// a CUDA graph can capture: nothing waits for the host (docs/algorithms/sync_free.md).
//
// Presets micro_sync_free and exdyna_sync_free (MiCRO / ExDyna partitions, threshold scaling).
// capacity = max(1, ceil(k/n (1 + slack))), slack = maxDensitySlack (0.25 when that is < 0).
// Papers: D. Yoon and S. Oh, MiCRO (HiPC 2023) and ExDyna (CCGrid 2024); reference code
// kljp/micro, whose implementations all-gather the counts first (the fixed slots are ours).
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
//
// One call path: on host buffers these steps are the resident sync_free call's
// (resident_sync_free.cc, the call on device buffers) with the CPU kernels on host memory (the
// sparsifier's host staging) and the communicator's transport in place. The differences are the
// host's, where reading a word costs nothing: the pass keeps its candidates and the selection
// reads them, any estimator may set the threshold (one that fits the call's data too), the
// call's decision is read before the output is written, so a refused call is an error of this
// call (the host's checks name the rank) and leaves recvbuf and the residual untouched, and the
// estimator and the search space carry the threshold and the partitions from call to call (the
// words are written from them at each call's start), as checkpoints read them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>

#include <memory>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/host_staging.h"
#include "algorithms/index_exchange.h"
#include "algorithms/reduction_context.h"
#include "algorithms/reductions.h"
#include "algorithms/resident_sync_free.h"
#include "algorithms/stream_exchange.h"
#include "algorithms/sync_free_capacity.h"
#include "algorithms/selection_trim.h"
#include "algorithms/sync_free_slots.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "kernels/shared/sync_free_call.h"

namespace sccl {
namespace {

uint64_t capacityOf(const ReductionContext& ctx) {
  return syncFreeCapacity(ctx.k_target, ctx.comm->nranks, ctx.config.max_density_slack, ctx.count);
}

// What a sync_free sparsifier keeps for its calls on host buffers: the resident call's state (its
// buffers in the host staging) and the fault word its kernels raise (cleared at every call: on
// host buffers a fault is an error of its call, not a sticky one).
struct SyncFreeHostState final : ReductionState {
  ResidentSyncFree resident;
  uint64_t fault = 0;
};

SyncFreeHostState& hostState(const ReductionContext& ctx) {
  auto* state = dynamic_cast<SyncFreeHostState*>(ctx.reduction_state.get());
  if (state == nullptr) {
    ctx.reduction_state = std::make_unique<SyncFreeHostState>();
    state = static_cast<SyncFreeHostState*>(ctx.reduction_state.get());
  }
  return *state;
}

// A call the kernels refused (status not kSyncFreeCompletes): the host's checks of the gathered
// slots say why, in the order the ranks agree on: a header (another call or config, a count
// above the capacity), then non-finite values (the policy: an error, or the step discarded with
// recvbuf NaN), then a peer's index outside its range or out of order.
scclResult_t refusedCall(SparseCall& call, const ResidentSyncFree& state) {
  const ReductionContext& ctx = *call.ctx;
  const size_t n = size_t(ctx.comm->nranks);
  const size_t stride = syncFreeSlotWords(state.capacity);
  std::vector<CallHeader> headers;
  SCCL_CHECK(checkSlotHeaders(call, state.capacity, state.gathered, stride, &headers));
  if (anyNonFinite(headers)) return applyNonFinitePolicy(call, headers);
  std::vector<const int64_t*> slices(n);
  for (size_t r = 0; r < n; ++r) slices[r] = state.gathered + r * stride + kSlotHeaderWords;
  SCCL_CHECK(assembleGlobalIndices(slices, ctx.rank_counts, ctx.search, ctx.iteration, ctx.count,
                                   &ctx.global_indices));
  return fail(scclInternalError,
              "sparse all-reduce (sync_free): the kernels refused call %llu, whose slots pass the "
              "host's checks",
              static_cast<unsigned long long>(ctx.iteration));
}

// A completed call: its counts from the gathered slots, the global list the sent-mask zeroes
// (every rank's slice in the order of the ranges, which do not overlap: ascending), and the
// estimator and the search space observe it.
void completedCall(SparseCall& call, const ResidentSyncFree& state) {
  const ReductionContext& ctx = *call.ctx;
  const size_t n = size_t(ctx.comm->nranks);
  const size_t stride = syncFreeSlotWords(state.capacity);
  call.k_global = call.k_max = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint64_t k = uint64_t(state.gathered[r * stride]);
    ctx.rank_counts[r] = k;
    call.k_global += k;
    call.k_max = std::max(call.k_max, k);
  }
  call.k_local = ctx.rank_counts[size_t(ctx.comm->rank)];
  std::vector<size_t> by_range(n);
  for (size_t r = 0; r < n; ++r) by_range[r] = r;
  const uint64_t* ranges = state.words.ranges;
  std::sort(by_range.begin(), by_range.end(),
            [&](size_t a, size_t b) { return ranges[2 * a] < ranges[2 * b]; });
  ctx.global_indices.resize(call.k_global);
  int64_t* to = ctx.global_indices.data();
  for (size_t r : by_range) {
    const int64_t* slice = state.gathered + r * stride + kSlotHeaderWords;
    to = std::copy_n(slice, ctx.rank_counts[r], to);
  }
  ctx.estimator.observe(call.k_global, ctx.k_target);
  ctx.search.observeCounts(ctx.rank_counts.data(), ctx.iteration);
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
  // The gather reduction's cap for the slack in effect.
  return densitySlackCap(k_target, nranks,
                         max_density_slack >= 0 ? max_density_slack : kSyncFreeDefaultSlack, count);
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
  HostStaging& staging = ctx.host_staging;
  SyncFreeHostState& host = hostState(ctx);
  ResidentSyncFree& state = host.resident;
  // The slots follow the density in effect (a warm-up or scclSparsifierSetDensity moves it):
  // allocated again when it changes, from staging that only grows.
  const uint64_t capacity = capacityOf(ctx);
  if (!state.ready || state.capacity != capacity) {
    SCCL_CHECK(prepareResidentSyncFree(ctx, staging, capacity, &host.fault, &host.fault, false,
                                       true, &state));
  } else {
    writeResidentSyncFreeWords(ctx, state);
  }
  host.fault = 0;
  StagedVectors vectors{const_cast<void*>(call.residual), call.acc, nullptr, nullptr, nullptr};
  call.kernels = &cpuKernels();
  call.device = &staging;
  call.stream = nullptr;
  HostExchange exchange;
  const auto start = std::chrono::steady_clock::now();
  const double comm_before = call.time_comm_us;
  scclResult_t result = residentSyncFreeSelectAndExchange(call, exchange, state, vectors);
  call.time_select_us +=
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() -
      (call.time_comm_us - comm_before);
  const bool completes = result == scclSuccess && *state.words.status == kSyncFreeCompletes;
  if (completes) result = residentSyncFreeReduceAndCommit(call, exchange, state, vectors);
  call.kernels = nullptr;
  call.device = nullptr;
  SCCL_CHECK(result);
  call.nonfinite_local = *state.words.nonfinite;
  if (!completes) {
    call.residual_updated = false;
    return refusedCall(call, state);
  }
  completedCall(call, state);
  return scclSuccess;
}

}  // namespace sccl
