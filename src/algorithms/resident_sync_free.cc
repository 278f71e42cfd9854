// The resident sync_free call: the sync_free reduction (sync_free_reduction.cc has its steps and
// bytes) with every step and every decision on the kernels' side, for device buffers
// (micro_sync_free, exdyna_sync_free). The host only enqueues: it never reads a count, a header
// or a flag back, so the call costs no host wait with collectives on the stream (NCCL) and can be
// captured in a CUDA graph (config streamOrdered); over host transports each collective is staged
// (one wait each). Host buffers run the same call on the CPU kernels over host memory (host words,
// ResidentSyncFree::host_words): the pass then keeps the candidates the selection reads, and the
// caller reads the call's decision between the two halves (sync_free_reduction.cc).
//
// Papers: D. Yoon and S. Oh, "MiCRO: Near-Zero Cost Gradient Sparsification for Scaling and
// Accelerating Distributed DNN Training" (HiPC 2023), and "Preserving Near-Optimal Gradient
// Sparsification Cost for Scalable Distributed Deep Learning" (ExDyna, CCGrid 2024); reference
// code kljp/micro. The fixed-size slots are sparsecoll's (docs/algorithms/sync_free.md): the
// papers' implementations all-gather the counts first.
// Steps of one call on rank r at call t (d_ = the kernels' memory, all on the call's stream):
//  1. syncFreeBeginCall: every rank's range at call *d_sequence from d_partitions; non-finite
//     count and check flag cleared;
//  2. d_acc = d_residual + gradient with the non-finite count (accumulate);
//  3. syncFreeSelect: |acc| >= *d_threshold in r's range, the largest kept up to the host
//     reduction's capacity for the density in effect (ties: the lowest indices), ascending into
//     r's slot of the fixed capacity with the header (k_r, non-finite count, config fingerprint,
//     call number);
//  4. all-gather the slots (8 (4 + capacity) bytes each);
//  5. syncFreeCheck: every header checked (same call and config, k_r within the capacity and the
//     range), the non-finite policy: the call's status word, a fault into the sticky fault word;
//  6. syncFreeGatherSlots: the n * capacity values at the slots' indices, every peer index
//     checked against its rank's range and order (a bad one fails the call);
//  7. all-reduce the values (sum in rank order);
//  8. syncFreeWrite: recvbuf = 0 and the values scattered (divided by n for scclAvg), d_acc zeroed
//     at the sent indices, if the call completes; else recvbuf = NaN;
//  9. the residual: the buffers trade roles and a call that did not complete copies the old
//     residual back (fixed buffers: a completed call copies d_acc into d_residual);
// 10. syncFreeEndCall: a completed call updates the threshold (the scaling rule on k'),
//     rebalances ExDyna's partitions and is counted; the call number advances.
// Host read-backs: none. Waits: none with collectives on the stream; staged, one per collective
// (two). Uploads: none (a fixed threshold is sent again only when the density changes it).
// Bytes on the wire per rank: the host sync_free reduction's, all-gather (4 + capacity) 8 out and
// (n-1) times that in, all-reduce of n capacity values.
// Differs from the host reduction in three ways: faults (a peer at another call, a bad slot,
// non-finite values under scclNonFiniteError) surface asynchronously (recvbuf = NaN, nothing else
// changes, scclSparsifierGetAsyncError reports the sticky fault, every later call does the same
// until scclSparsifierReset), as NCCL's errors do; the slots are sized once for the highest
// density the sparsifier may use (the host's follow the density in effect: the same entries,
// more padding on the wire under a density warm-up); the threshold, partitions and statistics
// live on the device (read when asked). The selections, values, outputs and
// residuals are otherwise the host run's bit for bit (with the proportional scaling rule the
// device's pow may round the threshold differently from the host's: kernels/shared/scaling_rule.h).
#include "algorithms/resident_sync_free.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "algorithms/async_fault.h"
#include "algorithms/sync_free_capacity.h"
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/error.h"
#include "partition/exdyna_partition.h"
#include "algorithms/reduction_context.h"

namespace sccl {
namespace {

// Each word on its own 256-byte line (a GPU's writes to one do not contend with another's), then
// the ranges, partitions (2 n each) and ExDyna's arrays (4 n).
constexpr size_t kLine = 256;
constexpr size_t kWordLines = 6;  // threshold, non-finite, bad, sequence, status, totals

size_t wordsBytes(size_t n) {
  return kWordLines * kLine + 8 * n * sizeof(uint64_t);
}

SyncFreeWords carveWords(char* base, size_t n, size_t capacity, uint64_t* fault) {
  SyncFreeWords w;
  w.nranks = int(n);
  w.capacity = capacity;
  w.threshold = reinterpret_cast<double*>(base);
  w.nonfinite = reinterpret_cast<uint64_t*>(base + kLine);
  w.bad = reinterpret_cast<uint32_t*>(base + 2 * kLine);
  w.sequence = reinterpret_cast<uint64_t*>(base + 3 * kLine);
  w.status = reinterpret_cast<uint32_t*>(base + 4 * kLine);
  w.totals = reinterpret_cast<SyncFreeTotals*>(base + 5 * kLine);
  w.ranges = reinterpret_cast<uint64_t*>(base + kWordLines * kLine);
  w.partitions = w.ranges + 2 * n;
  w.exdyna = reinterpret_cast<int64_t*>(w.partitions + 2 * n);
  w.fault = fault;
  return w;
}

}  // namespace

size_t residentSyncFreeCapacity(const ReductionContext& ctx) {
  return syncFreeCapacity(targetSelectionCount(ctx.density_ceiling, ctx.count), ctx.comm->nranks,
                          ctx.config.max_density_slack, ctx.count);
}

namespace {

// The words a call starts from, from the host's objects, into `h` (the words' layout in host
// memory): partitions, ExDyna's blocks, threshold, call number. Sets what follows from the search
// space in *s (select_items, the rebalancing rule).
void writeStartWords(const ReductionContext& ctx, const SyncFreeWords& h, ResidentSyncFree* s) {
  const size_t n = size_t(ctx.comm->nranks);
  s->select_items = 0;
  for (size_t p = 0; p < n; ++p) {
    const IndexRange part = ctx.search.partition(p);
    h.partitions[2 * p] = part.begin;
    h.partitions[2 * p + 1] = part.end;
    s->select_items = std::max<size_t>(s->select_items, part.size());
  }
  s->rebalances = false;
  if (const auto* exdyna = dynamic_cast<const ExDynaSearchSpace*>(&ctx.search)) {
    // The blocks move on the device; a partition can grow until every other one is down to its
    // minimum, so the selection may scan that many positions.
    s->rebalances = true;
    s->rebalance = exdyna->rebalanceRule();
    const uint64_t others = uint64_t(s->rebalance.min_blocks) * s->rebalance.block_size * (n - 1);
    s->select_items =
        std::max<size_t>(s->select_items, ctx.count > others ? ctx.count - others : ctx.count);
    for (size_t p = 0; p < n; ++p) {
      h.exdyna[p] = exdyna->blocksIn(p);
      h.exdyna[n + p] = exdyna->firstBlock(p);
    }
  }
  *h.threshold = ctx.estimator.currentThreshold();
  *h.sequence = ctx.iteration;
  s->uploaded_threshold = *h.threshold;
}

// Host words, steps 2 and 3's threshold: the pass accumulates and, with a threshold known before
// the data, selects the candidates of this rank's range at it; an estimator that fits the data
// finds the threshold after the pass. The threshold goes into the words (the selection reads it
// there); *keep shrinks to the estimator's exact count when it trims (top-k).
scclResult_t hostPassAndThreshold(SparseCall& call, ResidentSyncFree& state, StagedVectors& vectors,
                                  size_t* keep, bool* with_candidates) {
  const ReductionContext& ctx = *call.ctx;
  const SyncFreeWords& w = state.words;
  const uint64_t* bounds = w.ranges + 2 * size_t(ctx.comm->rank);
  const IndexRange range{size_t(bounds[0]), size_t(bounds[1])};
  ThresholdQuery query = selectionQuery(call, range);
  query.device = nullptr;  // host memory: an estimator that reads the data reads it in place
  const bool early = range.size() > 0 && ctx.estimator.thresholdBeforeData();
  if (early) SCCL_CHECK(ctx.estimator.threshold(query, w.threshold));
  AccumulateSelectArgs pass = accumulatePass(call, vectors, w.nonfinite);
  if (early) {
    pass.begin = range.begin;
    pass.end = range.end;
    pass.floor = *w.threshold;
    pass.idx = state.candidates;
    pass.capacity = state.candidate_room;
    pass.ncandidates = &state.candidate_count;
  }
  SCCL_CHECK(call.kernels->accumulateSelect(pass, call.stream));
  *with_candidates = early;
  if (range.size() == 0) return scclSuccess;
  if (!early) SCCL_CHECK(ctx.estimator.threshold(query, w.threshold));
  if (ctx.estimator.exactCount())
    *keep = std::min<size_t>(*keep, std::max<uint64_t>(1, query.k_target_local));
  return scclSuccess;
}

}  // namespace

scclResult_t prepareResidentSyncFree(const ReductionContext& ctx, DeviceStaging& staging,
                                     size_t capacity, const uint64_t* fault_host,
                                     uint64_t* fault_device, bool fixed_buffers, bool host_words,
                                     ResidentSyncFree* state) {
  ResidentSyncFree s;
  const size_t n = size_t(ctx.comm->nranks);
  const size_t element = ctx.acc_dtype == scclFloat64 ? 8 : 4;
  s.capacity = capacity;
  const size_t slot_bytes = syncFreeSlotWords(s.capacity) * sizeof(int64_t);
  void* memory = nullptr;
  SCCL_CHECK(staging.buffer(DeviceStaging::kSyncFreeSlot, slot_bytes, &memory));
  s.slot = static_cast<int64_t*>(memory);
  SCCL_CHECK(staging.buffer(DeviceStaging::kSyncFreeSlots, n * slot_bytes, &memory));
  s.gathered = static_cast<int64_t*>(memory);
  SCCL_CHECK(staging.buffer(DeviceStaging::kSyncFreeValues, n * s.capacity * element, &s.values));
  if (host_words) {
    // Room for the pass's candidates as the host reduction had it (an overflow scans the range).
    s.host_words = true;
    s.candidate_room = std::max<size_t>(4096, 2 * s.capacity);
    SCCL_CHECK(staging.buffer(DeviceStaging::kCandidateIndices, s.candidate_room * sizeof(int64_t),
                              &memory));
    s.candidates = static_cast<int64_t*>(memory);
  }
  SCCL_CHECK(staging.buffer(DeviceStaging::kSyncFreeWords, wordsBytes(n), &memory));
  s.words = carveWords(static_cast<char*>(memory), n, s.capacity, fault_device);
  s.fault_host = fault_host;
  s.fixed_buffers = fixed_buffers;

  // The words' first values, built on the host in the same layout and sent up in one copy.
  std::vector<char> initial(wordsBytes(n), 0);
  const SyncFreeWords h = carveWords(initial.data(), n, s.capacity, nullptr);
  writeStartWords(ctx, h, &s);
  s.first_call = ctx.iteration;
  SCCL_CHECK(staging.toDevice(memory, initial.data(), initial.size()));
  SCCL_CHECK(staging.synchronize());
  s.ready = true;
  *state = s;
  return scclSuccess;
}

void writeResidentSyncFreeWords(const ReductionContext& ctx, ResidentSyncFree& state) {
  writeStartWords(ctx, state.words, &state);
}

scclResult_t runResidentSyncFree(SparseCall& call, StreamExchange& exchange,
                                 ResidentSyncFree& state, StagedVectors& vectors) {
  SCCL_CHECK(residentSyncFreeSelectAndExchange(call, exchange, state, vectors));
  return residentSyncFreeReduceAndCommit(call, exchange, state, vectors);
}

scclResult_t residentSyncFreeSelectAndExchange(SparseCall& call, StreamExchange& exchange,
                                               ResidentSyncFree& state, StagedVectors& vectors) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = *call.kernels;
  void* stream = call.stream;
  const int rank = ctx.comm->rank;
  const SyncFreeWords& w = state.words;
  const size_t capacity = state.capacity;
  const ScalingRule* rule = ctx.estimator.scalingRule();
  if (!state.host_words && rule == nullptr &&
      ctx.estimator.currentThreshold() != state.uploaded_threshold) {
    // A fixed threshold that the density changed (the default 1 / (2 sqrt(k)) follows k).
    state.uploaded_threshold = ctx.estimator.currentThreshold();
    SCCL_CHECK(call.device->toDevice(w.threshold, &state.uploaded_threshold, sizeof(double)));
  }
  call.threshold = state.uploaded_threshold;  // the host's knowledge; the device's is in stats

  // Steps 1-3. The host's capacity for the density in effect (a warm-up or
  // scclSparsifierSetDensity moves it); the slot keeps its size, fixed for the highest density.
  size_t keep = std::min<size_t>(
      capacity,
      syncFreeCapacity(ctx.k_target, ctx.comm->nranks, ctx.config.max_density_slack, ctx.count));
  SCCL_CHECK(kernels.syncFreeBeginCall(w, stream));
  SyncFreeCandidates candidates;
  if (state.host_words) {
    bool with_candidates = false;
    SCCL_CHECK(hostPassAndThreshold(call, state, vectors, &keep, &with_candidates));
    if (with_candidates)
      candidates =
          SyncFreeCandidates{state.candidates, &state.candidate_count, state.candidate_room};
    call.threshold = *w.threshold;
  } else {
    SCCL_CHECK(
        kernels.accumulate(vectors.acc, ctx.config.error_feedback ? vectors.residual : nullptr,
                           ctx.acc_dtype, call.sendbuf, ctx.dtype, ctx.count, w.nonfinite, stream));
  }
  SCCL_CHECK(kernels.syncFreeSelect(vectors.acc, ctx.acc_dtype, w.ranges + 2 * size_t(rank),
                                    state.select_items, candidates, w.threshold, keep, capacity,
                                    w.nonfinite, ctx.fingerprint, w.sequence, state.slot, stream));

  // Steps 4-6.
  SCCL_CHECK(exchange.allGather(call, state.slot, state.gathered,
                                syncFreeSlotWords(capacity) * sizeof(int64_t)));
  SCCL_CHECK(kernels.syncFreeCheck(state.gathered, w, ctx.fingerprint,
                                   ctx.config.non_finite == scclNonFiniteError, stream));
  return kernels.syncFreeGatherSlots(vectors.acc, ctx.acc_dtype, state.gathered, w, state.values,
                                     stream);
}

scclResult_t residentSyncFreeReduceAndCommit(SparseCall& call, StreamExchange& exchange,
                                             ResidentSyncFree& state, StagedVectors& vectors) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = *call.kernels;
  void* stream = call.stream;
  const size_t n = size_t(ctx.comm->nranks);
  const SyncFreeWords& w = state.words;
  const size_t capacity = state.capacity;
  const size_t element = ctx.acc_dtype == scclFloat64 ? 8 : 4;
  const ScalingRule* rule = ctx.estimator.scalingRule();

  // Step 7.
  SCCL_CHECK(exchange.allReduceSum(call, state.values, state.values, n * capacity, ctx.acc_dtype));

  // Steps 8-10.
  SCCL_CHECK(kernels.syncFreeWrite(call.recvbuf, ctx.dtype, ctx.count, vectors.acc, ctx.acc_dtype,
                                   state.gathered, w, state.values,
                                   call.op == scclAvg ? uint32_t(n) : 1u, stream));
  if (ctx.config.error_feedback) {
    const size_t bytes = ctx.count * element;
    if (state.fixed_buffers) {
      SCCL_CHECK(
          kernels.copyByStatus(vectors.residual, vectors.acc, bytes, w.status, true, stream));
    } else {
      std::swap(vectors.residual, vectors.acc);
      SCCL_CHECK(
          kernels.copyByStatus(vectors.residual, vectors.acc, bytes, w.status, false, stream));
    }
  }
  SCCL_CHECK(kernels.syncFreeEndCall(state.gathered, w, ctx.k_target, rule,
                                     state.rebalances ? &state.rebalance : nullptr, stream));
  // The host knows none of the call's outcome: the statistics read it from the device when asked
  // (residentSyncFreeStats); the residual stays where it is.
  call.residual_updated = true;
  return scclSuccess;
}

scclResult_t residentSyncFreeStats(const ReductionContext& ctx, DeviceStaging& staging,
                                   const ResidentSyncFree& state, scclSparseStats_t* stats) {
  if (!state.ready) return scclSuccess;
  const size_t n = size_t(ctx.comm->nranks);
  std::vector<char> words(wordsBytes(n));
  std::vector<int64_t> gathered(n * syncFreeSlotWords(state.capacity));
  SCCL_CHECK(staging.toHost(words.data(), state.words.threshold, words.size()));
  SCCL_CHECK(staging.toHost(gathered.data(), state.gathered, gathered.size() * sizeof(int64_t)));
  const SyncFreeWords h = carveWords(words.data(), n, state.capacity, nullptr);
  const SyncFreeTotals& totals = *h.totals;
  scclSparseStats_t& s = *stats;
  uint64_t k_global = 0, k_max = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint64_t k = std::min<uint64_t>(uint64_t(gathered[r * syncFreeSlotWords(state.capacity)]),
                                          state.capacity);
    ctx.rank_counts[r] = k;
    k_global += k;
    k_max = std::max(k_max, k);
  }
  const size_t rank = size_t(ctx.comm->rank);
  s.iteration = state.first_call + totals.completed;
  s.kLocal = ctx.rank_counts[rank];
  s.kGlobal = k_global;
  s.kMax = k_max;
  s.density = ctx.count == 0 ? 0.0 : double(k_global) / double(ctx.count);
  s.densityError = double(k_global) / double(ctx.k_target) - 1.0;
  s.gatherInflation = k_global == 0 ? 0.0 : double(n) * double(k_max) / double(k_global);
  // As on the host: the threshold the last (completed) call used.
  s.threshold = totals.completed == 0 ? *h.threshold : totals.last_threshold;
  s.nonFinite = uint64_t(gathered[rank * syncFreeSlotWords(state.capacity) + 1]);
  // Every call moves the same bytes; the host cannot time work it only enqueued.
  const uint64_t calls = totals.completed + totals.discarded;
  s.totalBytesSent = s.bytesSent * calls;
  s.totalBytesReceived = s.bytesReceived * calls;
  s.timeSelectUs = s.timeCommUs = s.timeOtherUs = 0;
  s.totalTimeSelectUs = s.totalTimeCommUs = s.totalTimeOtherUs = 0;
  s.meanAbsDensityError =
      totals.completed == 0 ? 0.0 : totals.sum_abs_density_error / double(totals.completed);
  return scclSuccess;
}

scclResult_t residentSyncFreeCheckpointState(const ReductionContext& ctx, DeviceStaging& staging,
                                             const ResidentSyncFree& state, uint64_t* call_number) {
  if (!state.ready) return scclSuccess;
  const size_t n = size_t(ctx.comm->nranks);
  std::vector<char> words(wordsBytes(n));
  SCCL_CHECK(staging.toHost(words.data(), state.words.threshold, words.size()));
  const SyncFreeWords h = carveWords(words.data(), n, state.capacity, nullptr);
  if (ctx.estimator.scalingRule() != nullptr) ctx.estimator.adoptThreshold(*h.threshold);
  if (state.rebalances) {
    auto* exdyna = dynamic_cast<ExDynaSearchSpace*>(&ctx.search);
    if (exdyna == nullptr) return fail(scclInternalError, "resident sync_free: no exdyna space");
    SCCL_CHECK(exdyna->adoptBlocks(h.exdyna, n, "device sync_free state"));
  }
  *call_number = *h.sequence;
  return scclSuccess;
}

scclResult_t residentSyncFreeAsyncError(const ResidentSyncFree& state, scclResult_t* result) {
  *result = scclSuccess;
  if (!state.ready || state.fault_host == nullptr) return scclSuccess;
  const uint64_t word = loadAsyncFault(state.fault_host);
  // The message goes where scclGetLastError reads it; the query itself succeeds.
  if (word != 0) *result = asyncFaultError(word, "sync_free");
  return scclSuccess;
}

}  // namespace sccl
