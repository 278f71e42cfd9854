// scclSparseAllreduce on device buffers: the sync_free reduction (micro_sync_free,
// exdyna_sync_free; algorithms/sync_free_reduction.cc has the steps and bytes on the wire) with
// the sparsifier's residual in GPU memory, the CUDA backend's device steps on the caller's stream
// and the collectives on a transport that carries device memory (NCCL, or a host transport
// through pinned host staging: transports/staging/pinned_staging_transport.h).
//
// Steps of one call on rank r (d_ = device memory):
//  1. d_acc = d_residual + sendbuf, non-finite count into a device word (accumulate);
//  2. threshold from the estimator on the host: only estimators whose threshold is state carried
//     between calls (scaling) or a constant (fixed), so nothing is read back for it; 8 bytes to
//     the device;
//  3. syncFreeSelect: the capped selection and the slot with its header, written on the device;
//  4. the caller's stream is synchronised and the transport all-gathers the slots (the NCCL
//     transport's operations are blocking on its own stream);
//  5. the slot headers, 4 words per rank, are read back and checked on the host exactly as the
//     host reduction checks them (algorithms/sync_free_slots.h): the counts feed the statistics,
//     the non-finite policy and ExDyna's rebalancing;
//  6. syncFreeGatherSlots checks every peer index on the device (inside its rank's range,
//     strictly ascending: the host reduction's checks; a bad slot sets a device flag, read back
//     before anything is written: scclRemoteError);
//  7. the transport all-reduces the n * capacity values in rank order;
//  8. recvbuf = zeros, syncFreeWrite scatters the values (divided by n for scclAvg) and zeroes
//     d_acc at the selected indices; d_acc becomes the residual;
//  9. estimator and search space observe the counts on the host, as in the host reduction.
// Synchronisation points per call: the caller's stream before each of the two collectives, the
// header read-back and the flag read-back (docs/gpu.md). With config streamOrdered the call runs
// device_sparse_allreduce_stream_ordered.cc instead: the same device steps with the host's
// checks and updates as kernels, nothing read back, capturable in a CUDA graph.
// Differs from the host reduction only in where the steps run: the same slots, the same checks,
// the same selection and scatter arithmetic (tests/gpu compare them bit for bit).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/sync_free_capacity.h"
#include "algorithms/sync_free_slots.h"
#include "algorithms/threshold_query.h"
#include "comm/comm.h"
#include "core/device_collectives.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"
#include "partition/exdyna_partition.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_status.h"
#include "cuda/device_sparsifier_state.h"
#include "cuda/workspace.h"

namespace sccl {

void DeviceSparsifierStateDeleter::operator()(DeviceSparsifierState* state) const {
  delete state;
}

DeviceSparsifierState::~DeviceSparsifierState() {
  if (fault_host != nullptr) (void)cudaFreeHost(fault_host);
  if (index_fault_host != nullptr) (void)cudaFreeHost(index_fault_host);
}

namespace {

using Clock = std::chrono::steady_clock;

// A word of page-locked host memory mapped into the device (*host, and *device its address
// there), set to `initial`: the kernels write it, the host reads it without waiting.
template <typename Word>
scclResult_t mappedWord(Word** host, Word** device, Word initial, const char* what) {
  void* memory = nullptr;
  SCCL_CUDA_CHECK(cudaHostAlloc(&memory, sizeof(Word), cudaHostAllocMapped), what);
  *host = static_cast<Word*>(memory);
  **host = initial;
  void* alias = nullptr;
  SCCL_CUDA_CHECK(cudaHostGetDevicePointer(&alias, memory, 0), what);
  *device = static_cast<Word*>(alias);
  return scclSuccess;
}

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

cudaStream_t asStream(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

}  // namespace

// Device memory for every buffer of the call, allocated once per sparsifier (sizes are fixed).
scclResult_t createDeviceState(scclSparsifier& sp, DeviceSparsifierState** out) {
  auto state = std::make_unique<DeviceSparsifierState>();
  const size_t n = static_cast<size_t>(sp.comm->nranks);
  const size_t element = accElementSize(sp);
  state->stream_ordered = sp.config.stream_ordered;
  // Sized for the highest density the sparsifier may use (scclSparsifierSetDensity refuses more):
  // a warm-up from a higher start keeps that capacity after it ends.
  state->capacity = syncFreeCapacity(targetSelectionCount(sp.density_ceiling, sp.count),
                                     sp.comm->nranks, sp.config.max_density_slack, sp.count);
  const size_t slot_words = kSlotHeaderWords + state->capacity;
  const size_t vector_bytes = std::max<size_t>(1, sp.count) * element;
  SCCL_CHECK(state->buffer_a.reserve(vector_bytes, &state->residual));
  SCCL_CHECK(state->buffer_b.reserve(vector_bytes, &state->acc));
  void* memory = nullptr;
  // The slots, their words and the stream-ordered state belong to the sync_free reduction; the
  // gather reduction needs the two vectors, the non-finite word and its staging buffers only.
  constexpr size_t kLine = 256;
  if (sp.config.reduction != "sync_free") {
    SCCL_CHECK(state->small_memory.reserve(2 * kLine, &memory));
    state->nonfinite = static_cast<uint64_t*>(memory);
    // The resident gather's index-check word starts clear (kNoIndexFault: all bits set).
    state->index_fault = reinterpret_cast<uint32_t*>(static_cast<char*>(memory) + kLine);
    SCCL_CUDA_CHECK(cudaMemsetAsync(state->index_fault, 0xff, sizeof(uint32_t), nullptr),
                    "device sparsifier: the index-check word");
    SCCL_CHECK(mappedWord(&state->index_fault_host, &state->index_fault_published, kNoIndexFault,
                          "device sparsifier: the published index-check word"));
    SCCL_CHECK(state->kernels.fillZero(state->residual, vector_bytes, nullptr));
    SCCL_CUDA_CHECK(cudaStreamSynchronize(nullptr), "device sparsifier: zeroing the residual");
    SCCL_INFO(LogSubsys::Coll, "sparsifier %p rank %d: residual in device memory (%s)",
              static_cast<void*>(&sp), sp.comm->rank, sp.config.reduction.c_str());
    sp.device.reset(state.release());
    *out = sp.device.get();
    return scclSuccess;
  }
  SCCL_CHECK(state->slot_memory.reserve(slot_words * sizeof(int64_t), &memory));
  state->slot = static_cast<int64_t*>(memory);
  SCCL_CHECK(state->gathered_memory.reserve(n * slot_words * sizeof(int64_t), &memory));
  state->gathered = static_cast<int64_t*>(memory);
  SCCL_CHECK(state->values_memory.reserve(n * state->capacity * element, &state->values));
  // Six words, each on its own 256-byte line, then ranges and partitions (2 n words each) and
  // ExDyna's arrays (4 n words).
  const size_t small_bytes = 6 * kLine + 8 * n * sizeof(uint64_t);
  SCCL_CHECK(state->small_memory.reserve(small_bytes, &memory));
  SCCL_CHECK(state->kernels.fillZero(memory, small_bytes, nullptr));
  char* small = static_cast<char*>(memory);
  state->threshold = reinterpret_cast<double*>(small);
  state->nonfinite = reinterpret_cast<uint64_t*>(small + kLine);
  state->bad = reinterpret_cast<uint32_t*>(small + 2 * kLine);
  state->sequence = reinterpret_cast<uint64_t*>(small + 3 * kLine);
  state->status = reinterpret_cast<uint32_t*>(small + 4 * kLine);
  state->totals = reinterpret_cast<cuda_dispatch::StreamOrderedTotals*>(small + 5 * kLine);
  state->ranges = reinterpret_cast<uint64_t*>(small + 6 * kLine);
  state->partitions = state->ranges + 2 * n;
  state->exdyna_arrays = reinterpret_cast<int64_t*>(state->partitions + 2 * n);
  if (state->stream_ordered) {
    // The threshold, call number and partitions live on the device from here on.
    std::vector<uint64_t> partitions(2 * n);
    for (size_t p = 0; p < n; ++p) {
      const IndexRange part = sp.search->partition(p);
      partitions[2 * p] = part.begin;
      partitions[2 * p + 1] = part.end;
      state->select_items = std::max<size_t>(state->select_items, part.size());
    }
    if (const auto* exdyna = dynamic_cast<const ExDynaSearchSpace*>(sp.search.get())) {
      // The blocks move on the device; a partition can grow until every other one is down to
      // its minimum, so the selection scans that many positions.
      state->rebalances = true;
      state->exdyna_rule = exdyna->rebalanceRule();
      const ExDynaRebalanceRule& rule = state->exdyna_rule;
      const uint64_t others = uint64_t(rule.min_blocks) * rule.block_size * (n - 1);
      state->select_items =
          std::max<size_t>(state->select_items, sp.count > others ? sp.count - others : sp.count);
      std::vector<int64_t> arrays(4 * n, 0);
      for (size_t p = 0; p < n; ++p) {
        arrays[p] = exdyna->blocksIn(p);
        arrays[n + p] = exdyna->firstBlock(p);
      }
      SCCL_CUDA_CHECK(cudaMemcpy(state->exdyna_arrays, arrays.data(), arrays.size() * 8,
                                 cudaMemcpyHostToDevice),
                      "device sparsifier: ExDyna's blocks");
    }
    const double threshold = sp.estimator->currentThreshold();
    const uint64_t sequence = sp.iteration;
    SCCL_CUDA_CHECK(cudaMemcpy(state->partitions, partitions.data(), 2 * n * sizeof(uint64_t),
                               cudaMemcpyHostToDevice),
                    "device sparsifier: partitions");
    SCCL_CUDA_CHECK(
        cudaMemcpy(state->threshold, &threshold, sizeof(double), cudaMemcpyHostToDevice),
        "device sparsifier: threshold");
    SCCL_CUDA_CHECK(
        cudaMemcpy(state->sequence, &sequence, sizeof(uint64_t), cudaMemcpyHostToDevice),
        "device sparsifier: call number");
    SCCL_CHECK(state->reduce_scratch_memory.reserve(n * n * state->capacity * element,
                                                    &state->reduce_scratch));
    SCCL_CHECK(mappedWord(&state->fault_host, &state->fault_device, uint64_t{0},
                          "device sparsifier: fault word"));
  }
  SCCL_CHECK(state->kernels.fillZero(state->residual, vector_bytes, nullptr));
  SCCL_CUDA_CHECK(cudaStreamSynchronize(nullptr), "device sparsifier: zeroing the residual");
  state->headers.resize(n * kSlotHeaderWords);
  SCCL_INFO(LogSubsys::Coll,
            "sparsifier %p rank %d: residual and %zu-word slots in device memory%s",
            static_cast<void*>(&sp), sp.comm->rank, slot_words,
            state->stream_ordered ? " (stream-ordered)" : "");
  sp.device.reset(state.release());
  *out = sp.device.get();
  return scclSuccess;
}

scclResult_t checkDeviceSparseAllreduce(const scclSparsifier& sp, void* stream) {
  const std::string& reduction = sp.config.reduction;
  if (!sp.reduction->has_device_path) {
    return fail(scclInvalidUsage,
                "sendbuf/recvbuf are GPU memory: on device buffers scclSparseAllreduce runs the "
                "gather reduction (micro, exdyna, topk, cltk, hard_threshold, sidco), the sketch "
                "reduction (s2) and the sync_free reduction (micro_sync_free, exdyna_sync_free); "
                "algorithm '%s' (reduction '%s') runs on host buffers only (docs/gpu.md)",
                sp.config.algorithm.c_str(), reduction.c_str());
  }
  if (reduction == "sync_free" && !sp.estimator->correctable() && sp.config.estimator != "fixed") {
    return fail(scclInvalidUsage,
                "sendbuf/recvbuf are GPU memory: the sync_free reduction on the device takes its "
                "threshold from the scaling or fixed estimator, not '%s' (which reads the data "
                "of the call on the host)",
                sp.config.estimator.c_str());
  }
  if (sp.device == nullptr && sp.iteration > 0) {
    return fail(scclInvalidUsage,
                "sendbuf/recvbuf are GPU memory, but this sparsifier's residual is in host "
                "memory since its first call (%llu calls); scclSparsifierReset starts it again",
                static_cast<unsigned long long>(sp.iteration));
  }
  if (sp.config.stream_ordered) SCCL_CHECK(checkStreamOrderedCall(sp, stream));
  // Over a host transport the collectives go through pinned host staging (created once here).
  return prepareDeviceTransport(sp.comm);
}

scclResult_t runDeviceSparseAllreduce(SparseCall& call, void* stream_handle) {
  scclSparsifier& sp = *call.sp;
  const cudaStream_t stream = asStream(stream_handle);
  if (sp.config.stream_ordered) return runStreamOrderedSparseAllreduce(call, stream_handle);
  if (sp.config.reduction != "sync_free") return runDeviceStagedCall(call, stream_handle);
  DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr) SCCL_CHECK(createDeviceState(sp, &d));
  const KernelBackend& kernels = d->kernels;
  d->staging.setStream(stream);
  call.acc = d->acc;
  call.kernels = &d->kernels;
  call.device = &d->staging;  // the estimator's query and the non-finite output use it
  call.stream = stream_handle;
  const int rank = sp.comm->rank;
  const size_t n = static_cast<size_t>(sp.comm->nranks);
  const uint64_t capacity = d->capacity;
  const size_t slot_words = kSlotHeaderWords + capacity;
  const size_t element = accElementSize(sp);

  // Steps 1-3 on the caller's stream.
  Clock::time_point start = Clock::now();
  SCCL_CHECK(kernels.fillZero(d->nonfinite, sizeof(uint64_t), stream));
  SCCL_CHECK(d->kernels.accumulate(d->acc, sp.config.error_feedback ? d->residual : nullptr,
                                   sp.acc_dtype, call.sendbuf, sp.dtype, sp.count, d->nonfinite,
                                   stream));
  const IndexRange range = sp.search->rangeFor(rank, sp.iteration);
  call.threshold = sp.estimator->currentThreshold();
  if (range.size() > 0) {  // as the host reduction: an empty range asks the estimator nothing
    SCCL_CHECK(sp.estimator->threshold(selectionQuery(call, range), &call.threshold));
    if (sp.estimator->exactCount()) {
      return fail(scclInternalError, "device sparse all-reduce: estimator '%s' asks for trimming",
                  sp.estimator->name());
    }
  }
  // Every rank's range (this rank's bounds the selection, all of them check the peers' indices),
  // the threshold and the call number, to the device.
  const std::vector<uint64_t> ranges = rankRanges(sp);
  const uint64_t sequence = sp.iteration;
  SCCL_CUDA_CHECK(cudaMemcpyAsync(d->ranges, ranges.data(), ranges.size() * sizeof(uint64_t),
                                  cudaMemcpyHostToDevice, stream),
                  "device sparse all-reduce: ranges");
  SCCL_CUDA_CHECK(cudaMemcpyAsync(d->threshold, &call.threshold, sizeof(double),
                                  cudaMemcpyHostToDevice, stream),
                  "device sparse all-reduce: threshold");
  SCCL_CUDA_CHECK(
      cudaMemcpyAsync(d->sequence, &sequence, sizeof(uint64_t), cudaMemcpyHostToDevice, stream),
      "device sparse all-reduce: call number");
  SCCL_CHECK(d->kernels.syncFreeSelect(d->acc, sp.acc_dtype, d->ranges + 2 * size_t(rank),
                                       range.size(), d->threshold, capacity, d->nonfinite,
                                       sp.fingerprint, d->sequence, d->slot, stream));
  SCCL_CUDA_CHECK(cudaStreamSynchronize(stream), "device sparse all-reduce: selection");
  call.time_select_us += microsecondsSince(start);

  // Step 4: the slots; step 5: their headers on the host.
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allGather(d->slot, d->gathered, slot_words * sizeof(int64_t));
  }));
  countAllGather(call, slot_words * sizeof(int64_t));
  SCCL_CUDA_CHECK(cudaMemcpy2D(d->headers.data(), kSlotHeaderWords * sizeof(int64_t), d->gathered,
                               slot_words * sizeof(int64_t), kSlotHeaderWords * sizeof(int64_t), n,
                               cudaMemcpyDeviceToHost),
                  "device sparse all-reduce: slot headers");
  std::vector<CallHeader> headers;
  SCCL_CHECK(checkSlotHeaders(call, capacity, d->headers.data(), kSlotHeaderWords, &headers));
  call.k_local = sp.rank_counts[static_cast<size_t>(rank)];
  call.nonfinite_local = headers[static_cast<size_t>(rank)].nonfinite;
  if (anyNonFinite(headers)) {
    return applyNonFinitePolicy(call, headers);
  }

  // Step 6: every peer's indices checked against its range while the values are gathered.
  SCCL_CHECK(kernels.fillZero(d->bad, sizeof(uint32_t), stream));
  SCCL_CHECK(d->kernels.syncFreeGatherSlots(d->acc, sp.acc_dtype, sp.count, d->gathered, d->ranges,
                                            int(n), capacity, d->values, d->bad, stream));
  uint32_t bad = 0;
  SCCL_CUDA_CHECK(cudaMemcpyAsync(&bad, d->bad, sizeof(bad), cudaMemcpyDeviceToHost, stream),
                  "device sparse all-reduce: slot check");
  SCCL_CUDA_CHECK(cudaStreamSynchronize(stream), "device sparse all-reduce: slot check");
  if (bad != 0) {
    return fail(scclRemoteError,
                "sparse all-reduce (sync_free, device): a peer's slot holds an index outside "
                "that rank's range or a count above the capacity");
  }

  // Step 7: the values, summed in rank order.
  const size_t slots = n * capacity;
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allReduce(d->values, d->values, slots, sp.acc_dtype, ReduceOp::Sum);
  }));
  countAllReduce(call, slots * element);

  // Step 8: output and residual.
  SCCL_CHECK(kernels.fillZero(call.recvbuf, sp.count * dataTypeSize(sp.dtype), stream));
  SCCL_CHECK(d->kernels.syncFreeWrite(call.recvbuf, sp.dtype, d->acc, sp.acc_dtype, sp.count,
                                      d->gathered, d->ranges, int(n), capacity, d->values,
                                      call.op == scclAvg ? uint32_t(n) : 1u, nullptr, stream));
  if (sp.config.error_feedback) std::swap(d->residual, d->acc);
  call.residual_updated = true;

  // Step 9.
  call.k_max = *std::max_element(sp.rank_counts.begin(), sp.rank_counts.end());
  call.k_global = std::accumulate(sp.rank_counts.begin(), sp.rank_counts.end(), uint64_t{0});
  sp.estimator->observe(call.k_global, sp.k_target);
  sp.search->observeCounts(sp.rank_counts.data(), sp.iteration);
  return scclSuccess;
}

scclResult_t deviceResidualNorm(scclSparsifier& sp, double* norm) {
  *norm = 0;
  if (sp.device == nullptr || sp.count == 0) return scclSuccess;
  AbsMoments moments;
  // The last call's writes to the residual may be pending on the caller's stream, which may be
  // non-blocking (unordered with the legacy stream) or destroyed by now: wait for the device.
  SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "residual norm: the last call's work");
  SCCL_CHECK(sp.device->kernels.absMoments(sp.device->residual, sp.acc_dtype, 0, sp.count, 0.0,
                                           false, &moments, nullptr));
  *norm = std::sqrt(moments.sum_sq);
  return scclSuccess;
}

}  // namespace sccl
