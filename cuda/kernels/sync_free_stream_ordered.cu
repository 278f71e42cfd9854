// The kernels that let a sync_free call run with nothing waiting for the host (the stream-ordered
// mode, cuda/device_sparse_allreduce_stream_ordered.cc): what the host does between the steps of
// the read-back path (compute the ranges of the call, check the slot headers, apply the
// non-finite policy, count the call) done on the device, one thread where the work is a handful
// of words, and ExDyna's rebalancing of the partitions. Every decision of a call lands in one
// status word that the later kernels read:
//   0 the call completes; 1 discarded (non-finite values, policy propagate): recvbuf = NaN,
//   residual and threshold unchanged; 2 failed (a fault, now or in an earlier call, recorded in
//   the pinned fault word that scclSparsifierGetAsyncError reads): recvbuf = NaN, nothing else
//   changes.
// The checks are the host's own functions (kernels/shared/sync_free_slot_check.h,
// kernels/shared/cyclic_partition.h), compiled for the device.
#include "kernels/shared/sync_free_async_fault.h"
#include "kernels/shared/sync_free_slot_check.h"
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/cyclic_partition.h"
#include "kernels/shared/exdyna_rebalance.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr uint32_t kCompletes = 0, kDiscarded = 1, kFailed = 2;

// One store to pinned host memory, made visible to the host before the kernel ends. Only the
// first fault is kept (the word is sticky until scclSparsifierReset).
__device__ void raiseFault(uint64_t* fault_word, AsyncFault fault, int rank, uint64_t call) {
  volatile uint64_t* word = fault_word;
  if (*word != 0) return;
  *word = encodeAsyncFault(fault, rank, call);
  __threadfence_system();
}

__global__ void callRanges(const uint64_t* partitions, int nranks, const uint64_t* sequence,
                           uint64_t* ranges) {
  for (int r = 0; r < nranks; ++r) {
    const size_t p = cyclicPartition(r, *sequence, nranks);
    ranges[2 * r] = partitions[2 * p];
    ranges[2 * r + 1] = partitions[2 * p + 1];
  }
}

__global__ void checkHeaders(const int64_t* gathered, int nranks, size_t capacity,
                             uint64_t fingerprint, const uint64_t* sequence, const uint64_t* ranges,
                             bool nonfinite_is_error, uint32_t* status, uint64_t* fault_word) {
  if (*static_cast<volatile uint64_t*>(fault_word) != 0) {  // an earlier call failed
    *status = kFailed;
    return;
  }
  const SlotHeaderVerdict verdict = checkSlotHeaderWords(
      gathered, kSlotHeaderWords + capacity, nranks, capacity, fingerprint, *sequence, ranges);
  if (verdict.fault != SlotFault::None) {
    raiseFault(fault_word,
               verdict.fault == SlotFault::OtherCall ? AsyncFault::OtherCall
                                                     : AsyncFault::CountAboveCapacity,
               verdict.rank, *sequence);
    *status = kFailed;
  } else if (verdict.first_nonfinite_rank >= 0) {
    if (nonfinite_is_error) {
      raiseFault(fault_word, AsyncFault::NonFinite, verdict.first_nonfinite_rank, *sequence);
      *status = kFailed;
    } else {
      *status = kDiscarded;
    }
  } else {
    *status = kCompletes;
  }
}

__global__ void settle(const uint32_t* bad, const uint64_t* sequence, uint32_t* status,
                       uint64_t* fault_word) {
  if (*bad != 0 && *status != kFailed) {
    raiseFault(fault_word, AsyncFault::IndexOutOfRange, -1, *sequence);
    *status = kFailed;
  }
}

// recvbuf = 0 where the call completes (the selected entries are written next), else the NaN of
// the gradient type (the host's pattern, algorithms/call_header.h).
template <typename Word>
__global__ void fillOutput(Word* out, size_t count, Word nan, const uint32_t* status) {
  const Word value = *status == kCompletes ? Word(0) : nan;
  for (size_t i = globalThread(); i < count; i += gridThreads()) out[i] = value;
}

__global__ void commitResidual(uint32_t* residual, const uint32_t* acc, size_t words,
                               const uint32_t* status) {
  if (*status != kCompletes) return;
  for (size_t i = globalThread(); i < words; i += gridThreads()) residual[i] = acc[i];
}

__global__ void exdynaRebalanceAfterCall(ExDynaRebalanceRule rule, const int64_t* gathered,
                                         size_t capacity, const uint64_t* sequence,
                                         const uint32_t* status, int64_t* arrays,
                                         uint64_t* partitions) {
  if (*status != kCompletes) return;  // as the host: only a completed call is observed
  const size_t n = size_t(rule.nranks);
  int64_t* blocks = arrays;
  int64_t* first_block = arrays + n;
  int64_t* ks = arrays + 2 * n;
  uint64_t* counts = reinterpret_cast<uint64_t*>(arrays + 3 * n);
  for (size_t r = 0; r < n; ++r) {
    const uint64_t k = uint64_t(gathered[r * (kSlotHeaderWords + capacity)]);
    counts[r] = k < capacity ? k : capacity;
  }
  exdynaRebalance(rule, counts, *sequence, blocks, first_block, ks);
  for (size_t p = 0; p < n; ++p)
    exdynaPartitionBounds(rule, blocks, first_block, p, &partitions[2 * p], &partitions[2 * p + 1]);
}

__global__ void endCall(const int64_t* gathered, int nranks, size_t capacity, uint64_t k_target,
                        const uint32_t* status, StreamOrderedTotals* totals, uint64_t* sequence) {
  if (*status == kCompletes) {
    uint64_t k_global = 0;
    for (int r = 0; r < nranks; ++r) {
      const uint64_t k = uint64_t(gathered[size_t(r) * (kSlotHeaderWords + capacity)]);
      k_global += k < capacity ? k : capacity;
    }
    const double error = k_target == 0 ? 0.0 : double(k_global) / double(k_target) - 1.0;
    totals->sum_abs_density_error += error < 0 ? -error : error;
    ++totals->completed;
  } else if (*status == kDiscarded) {
    ++totals->discarded;
  }
  ++*sequence;
}

}  // namespace

cudaError_t syncFreeCallRanges(const uint64_t* partitions, int nranks, const uint64_t* sequence,
                               uint64_t* ranges, cudaStream_t stream) {
  callRanges<<<1, 1, 0, stream>>>(partitions, nranks, sequence, ranges);
  return cudaGetLastError();
}

cudaError_t syncFreeCheckHeaders(const int64_t* gathered, int nranks, size_t capacity,
                                 uint64_t fingerprint, const uint64_t* sequence,
                                 const uint64_t* ranges, bool nonfinite_is_error, uint32_t* status,
                                 uint64_t* fault_word, cudaStream_t stream) {
  checkHeaders<<<1, 1, 0, stream>>>(gathered, nranks, capacity, fingerprint, sequence, ranges,
                                    nonfinite_is_error, status, fault_word);
  return cudaGetLastError();
}

cudaError_t syncFreeSettle(const uint32_t* bad, const uint64_t* sequence, uint32_t* status,
                           uint64_t* fault_word, cudaStream_t stream) {
  settle<<<1, 1, 0, stream>>>(bad, sequence, status, fault_word);
  return cudaGetLastError();
}

cudaError_t syncFreeFillOutput(void* recv, scclDataType_t dtype, size_t count,
                               const uint32_t* status, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  // The host's patterns (fillWithNaN): float32 and float64 quiet NaN, converted by
  // kernels/shared/half.h.
  const float nan = bitsToFloat(0x7fc00000u);
  switch (dtype) {
    case scclFloat64:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint64_t*>(recv), count,
                                                          uint64_t(0x7ff8000000000000ull), status);
      break;
    case scclFloat16:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint16_t*>(recv), count,
                                                          floatToFp16(nan), status);
      break;
    case scclBfloat16:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint16_t*>(recv), count,
                                                          floatToBf16(nan), status);
      break;
    default:
      fillOutput<<<gridFor(count), kThreads, 0, stream>>>(static_cast<uint32_t*>(recv), count,
                                                          uint32_t(0x7fc00000u), status);
      break;
  }
  return cudaGetLastError();
}

cudaError_t syncFreeCommitResidual(void* residual, const void* acc, size_t bytes,
                                   const uint32_t* status, cudaStream_t stream) {
  const size_t words = bytes / sizeof(uint32_t);  // float32 or float64 residual: whole words
  if (words == 0) return cudaSuccess;
  commitResidual<<<gridFor(words), kThreads, 0, stream>>>(
      static_cast<uint32_t*>(residual), static_cast<const uint32_t*>(acc), words, status);
  return cudaGetLastError();
}

cudaError_t syncFreeExDynaRebalance(const ExDynaRebalanceRule& rule, const int64_t* gathered,
                                    size_t capacity, const uint64_t* sequence,
                                    const uint32_t* status, int64_t* arrays, uint64_t* partitions,
                                    cudaStream_t stream) {
  exdynaRebalanceAfterCall<<<1, 1, 0, stream>>>(rule, gathered, capacity, sequence, status, arrays,
                                                partitions);
  return cudaGetLastError();
}

cudaError_t syncFreeEndCall(const int64_t* gathered, int nranks, size_t capacity, uint64_t k_target,
                            const uint32_t* status, StreamOrderedTotals* totals, uint64_t* sequence,
                            cudaStream_t stream) {
  endCall<<<1, 1, 0, stream>>>(gathered, nranks, capacity, k_target, status, totals, sequence);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
