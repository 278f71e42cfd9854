// scclSparseAllreduce on device buffers: the sparsifier's device half (residual, accumulator,
// the staging of the reductions' arrays, the mapped fault words), the entry checks, and the
// dispatch to the call that runs it, all written once in src/algorithms against the kernel
// interface: the resident sync_free call (algorithms/resident_sync_free.cc) for micro_sync_free
// and exdyna_sync_free, the gather and sketch reductions (device_staged_call.cc) for the others.
// The collectives run on the stream where the transport has stream collectives (NCCL), else
// through the staging's page-locked buffers over the host transport (algorithms/stream_exchange.h).
#include <cuda_runtime_api.h>

#include <cmath>
#include <memory>

#include "algorithms/async_fault.h"
#include "algorithms/resident_sync_free.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"
#include "comm/comm.h"
#include "core/device_collectives.h"
#include "core/error.h"
#include "core/log.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_status.h"
#include "cuda/device_sparsifier_state.h"
#include "transports/stream_collectives.h"

namespace sccl {

void DeviceSparsifierStateDeleter::operator()(DeviceSparsifierState* state) const {
  delete state;
}

DeviceSparsifierState::~DeviceSparsifierState() {
  // Calls enqueued on the caller's streams may still write these buffers and words: let them
  // finish before anything is freed (a captured graph of this sparsifier is invalid from here).
  (void)cudaDeviceSynchronize();
  if (fault_host != nullptr) (void)cudaFreeHost(fault_host);
  if (index_fault_host != nullptr) (void)cudaFreeHost(index_fault_host);
}

namespace {

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

// The collectives of a resident call: the transport's on the stream, else staged.
std::unique_ptr<StreamExchange> exchangeFor(const scclSparsifier& sp, DeviceSparsifierState& d,
                                            void* stream) {
  StreamCollectives* on_stream = sp.comm->transport->streamCollectives();
  if (on_stream != nullptr)
    return std::make_unique<OnStreamExchange>(*on_stream, d.staging, stream);
  return std::make_unique<StagedExchange>(d.staging);
}

scclResult_t checkStreamOrderedCall(const scclSparsifier& sp, void* stream) {
  if (sp.comm->transport->streamCollectives() == nullptr) {
    return fail(scclInvalidUsage,
                "streamOrdered needs the nccl transport: the call only enqueues work on the "
                "caller's stream (so that a CUDA graph can capture it), and NCCL is the transport "
                "whose collectives go on a stream; '%s' carries device buffers through pinned "
                "host staging, which waits on the host between its copies and its operations "
                "(set streamOrdered = 0 to run this preset on it)",
                sp.comm->transport->name());
  }
  if (sp.device != nullptr) return scclSuccess;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SCCL_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture),
                  "stream-ordered sparse all-reduce: capture status");
  if (capture != cudaStreamCaptureStatusNone) {
    return fail(scclInvalidUsage,
                "stream-ordered sparse all-reduce: the first call on device buffers allocates the "
                "sparsifier's device memory and cannot be captured; make one call (a warm-up "
                "step) before capturing");
  }
  return scclSuccess;
}

}  // namespace

// Device memory for every buffer of the call, allocated once per sparsifier (sizes are fixed).
scclResult_t createDeviceState(scclSparsifier& sp, void* stream, DeviceSparsifierState** out) {
  auto state = std::make_unique<DeviceSparsifierState>();
  state->staging.setStream(static_cast<cudaStream_t>(stream));
  const size_t vector_bytes = std::max<size_t>(1, sp.count) * accElementSize(sp);
  SCCL_CHECK(state->buffer_a.reserve(vector_bytes, &state->residual));
  SCCL_CHECK(state->buffer_b.reserve(vector_bytes, &state->acc));
  void* memory = nullptr;
  constexpr size_t kLine = 256;
  SCCL_CHECK(state->small_memory.reserve(2 * kLine, &memory));
  state->nonfinite = static_cast<uint64_t*>(memory);
  // The resident gather's index-check word starts clear (kNoIndexFault: all bits set).
  state->index_fault = reinterpret_cast<uint32_t*>(static_cast<char*>(memory) + kLine);
  SCCL_CUDA_CHECK(cudaMemsetAsync(state->index_fault, 0xff, sizeof(uint32_t), nullptr),
                  "device sparsifier: the index-check word");
  SCCL_CHECK(mappedWord(&state->index_fault_host, &state->index_fault_published, kNoIndexFault,
                        "device sparsifier: the published index-check word"));
  // The residual starts as the host's: zero after creation or reset, or what the host calls or
  // a loaded checkpoint left there (nothing accumulated is lost when the buffers move).
  SCCL_CHECK(state->kernels.fillZero(state->residual, vector_bytes, nullptr));
  SCCL_CUDA_CHECK(cudaStreamSynchronize(nullptr), "device sparsifier: zeroing the residual");
  if (sp.count > 0) {
    SCCL_CUDA_CHECK(cudaMemcpy(state->residual, sp.residual.data(), sp.count * accElementSize(sp),
                               cudaMemcpyHostToDevice),
                    "device sparsifier: uploading the residual");
  }
  const ReductionContext ctx = reductionContext(sp);
  // The calls that read nothing back report their faults through a sticky word.
  if (sp.config.reduction == "sync_free" || callReadsNothingBack(ctx)) {
    SCCL_CHECK(mappedWord(&state->fault_host, &state->fault_device, uint64_t{0},
                          "device sparsifier: fault word"));
  }
  if (sp.config.reduction == "sync_free") {
    SCCL_CHECK(prepareResidentSyncFree(ctx, state->staging, residentSyncFreeCapacity(ctx),
                                       state->fault_host, state->fault_device,
                                       sp.config.stream_ordered, false, &state->sync_free));
  }
  SCCL_INFO(LogSubsys::Coll, "sparsifier %p rank %d: residual in device memory (%s%s)",
            static_cast<void*>(&sp), sp.comm->rank, sp.config.reduction.c_str(),
            sp.config.stream_ordered ? ", stream-ordered" : "");
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

scclResult_t runDeviceSparseAllreduce(scclSparsifier& sp, SparseCall& call, void* stream) {
  if (sp.config.reduction != "sync_free") return runDeviceStagedCall(sp, call, stream);
  DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr) SCCL_CHECK(createDeviceState(sp, stream, &d));
  d->staging.setStream(static_cast<cudaStream_t>(stream));
  call.acc = d->acc;
  call.kernels = &d->kernels;
  call.device = &d->staging;
  call.stream = stream;
  StagedVectors vectors{d->residual, d->acc, d->nonfinite, nullptr, nullptr};
  const std::unique_ptr<StreamExchange> exchange = exchangeFor(sp, *d, stream);
  const scclResult_t result = runResidentSyncFree(call, *exchange, d->sync_free, vectors);
  d->residual = vectors.residual;
  d->acc = vectors.acc;
  return result;
}

scclResult_t deviceAsyncError(const scclSparsifier& sp, scclResult_t* result) {
  *result = scclSuccess;
  const DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr) return scclSuccess;
  if (d->index_fault_host != nullptr) {
    // The resident gather's index check (src/algorithms/resident_gather.cc), as far as the
    // device has got: published by the call's last kernel.
    const uint32_t rank = __atomic_load_n(d->index_fault_host, __ATOMIC_ACQUIRE);
    if (rank != kNoIndexFault) {
      *result = scclRemoteError;
      (void)fail(scclRemoteError,
                 "sparse all-reduce on device buffers: rank %u sent an index outside its range or "
                 "out of order; that call left recvbuf untouched and kept the residual, and every "
                 "later call fails until scclSparsifierReset",
                 rank);
      return scclSuccess;
    }
  }
  if (d->fault_host != nullptr && !d->sync_free.ready) {
    // S2's and CLT-k's calls, which read nothing back; the message goes where scclGetLastError
    // reads it.
    const uint64_t word = loadAsyncFault(d->fault_host);
    if (word != 0) *result = asyncFaultError(word, sp.config.algorithm.c_str());
    return scclSuccess;
  }
  return residentSyncFreeAsyncError(d->sync_free, result);
}

scclResult_t deviceRefreshStats(scclSparsifier& sp) {
  DeviceSparsifierState* d = sp.device.get();
  if (d != nullptr && d->fault_host != nullptr && !d->sync_free.ready) {
    // S2's and CLT-k's calls, which read nothing back: their plan and totals, once the device
    // ran them.
    SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "sparsifier statistics: the calls' work");
    d->staging.setStream(nullptr);
    return settledCallStats(reductionContext(sp), d->staging, &sp.stats);
  }
  if (d == nullptr || !d->sync_free.ready) return scclSuccess;
  // The calls enqueued so far may still run on a stream the caller owns, possibly destroyed by
  // now: wait for the device, then read on the legacy stream.
  SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "sparsifier statistics: the calls' work");
  d->staging.setStream(nullptr);
  return residentSyncFreeStats(reductionContext(sp), d->staging, d->sync_free, &sp.stats);
}

scclResult_t deviceResidualNorm(scclSparsifier& sp, double* norm) {
  *norm = 0;
  if (sp.device == nullptr || sp.count == 0) return scclSuccess;
  AbsMoments moments;
  // The last call's writes to the residual may be pending on the caller's stream, which may be
  // non-blocking (unordered with the legacy stream) or destroyed by now: wait for the device.
  SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "residual norm: the last call's work");
  // Its own kernels: the calls' workspace must not grow here (a captured call holds its address).
  SCCL_CHECK(sp.device->statistics_kernels.absMoments(sp.device->residual, sp.acc_dtype, 0,
                                                      sp.count, 0.0, false, &moments, nullptr));
  *norm = std::sqrt(moments.sum_sq);
  return scclSuccess;
}

scclResult_t deviceCheckpointState(scclSparsifier& sp, uint64_t* call_number) {
  *call_number = sp.iteration;
  DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr || !d->sync_free.ready) return scclSuccess;
  // As for the statistics: the calls may still run on a stream the caller owns.
  SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "checkpoint: the calls' work");
  d->staging.setStream(nullptr);
  return residentSyncFreeCheckpointState(reductionContext(sp), d->staging, d->sync_free,
                                         call_number);
}

scclResult_t deviceExportResidual(scclSparsifier& sp, void* host) {
  DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr) return fail(scclInternalError, "checkpoint: no device residual to read");
  if (sp.count == 0) return scclSuccess;
  // As for the norm: the last call's writes may be pending on a stream the caller owns.
  SCCL_CUDA_CHECK(cudaDeviceSynchronize(), "checkpoint: the last call's work");
  SCCL_CUDA_CHECK(cudaMemcpy(host, d->residual, sp.count * accElementSize(sp),
                             cudaMemcpyDeviceToHost),
                  "checkpoint: reading the device residual");
  return scclSuccess;
}

}  // namespace sccl
