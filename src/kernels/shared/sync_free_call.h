// The decisions of a device-resident sync_free call (algorithms/resident_sync_free.cc), compiled
// for the host and the device: the CPU backend runs these functions directly, the CUDA backend in
// one-thread kernels (cuda/kernels/sync_free_call.cu), so both decide every call alike. They are
// what the host reduction decides between its steps (sync_free_reduction.cc): the ranges of the
// call, the check of the gathered slot headers, the non-finite policy, the threshold update and
// ExDyna's rebalancing, done where the slots are, so that nothing is read back.
// Every decision of a call lands in its status word, which the later kernels read:
//   kSyncFreeCompletes: the call completes;
//   kSyncFreeDiscarded: non-finite values under the propagate policy: recvbuf = NaN, residual,
//     threshold and partitions unchanged;
//   kSyncFreeFailed: a fault now or at an earlier call (recorded in the sticky fault word,
//     kernels/shared/sync_free_async_fault.h, which scclSparsifierGetAsyncError reads): recvbuf =
//     NaN, nothing else changes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/cyclic_partition.h"
#include "kernels/shared/exdyna_rebalance.h"
#include "kernels/shared/host_device.h"
#include "kernels/shared/scaling_rule.h"
#include "kernels/shared/sync_free_async_fault.h"
#include "kernels/shared/sync_free_slot_check.h"

namespace sccl {

constexpr uint32_t kSyncFreeCompletes = 0, kSyncFreeDiscarded = 1, kSyncFreeFailed = 2;

// What the calls did, for the statistics (the host enqueued them and knows none of it).
struct SyncFreeTotals {
  uint64_t completed = 0;            // calls that completed
  uint64_t discarded = 0;            // calls discarded for non-finite values
  double sum_abs_density_error = 0;  // over completed calls, |k'/k - 1|
  double last_threshold = 0;         // the threshold the last completed call selected at
};

// The call's words in the kernels' memory (each on its own line on a GPU), except `fault`: the
// sparsifier's sticky fault word, memory the host reads without waiting (mapped page-locked
// memory on CUDA).
struct SyncFreeWords {
  int nranks = 1;
  size_t capacity = 1;               // indices per slot
  uint64_t* ranges = nullptr;        // 2 n: every rank's range at this call
  uint64_t* partitions = nullptr;    // 2 n: the search space's partitions
  int64_t* exdyna = nullptr;         // 4 n: ExDyna's blocks, first blocks and scratch
  double* threshold = nullptr;       // the threshold of the next call
  uint64_t* nonfinite = nullptr;     // this rank's non-finite count
  uint32_t* bad = nullptr;           // set when a peer's slot index fails its check
  uint64_t* sequence = nullptr;      // the call number
  uint32_t* status = nullptr;        // the call's decision
  SyncFreeTotals* totals = nullptr;  // what the calls did
  uint64_t* fault = nullptr;         // the sticky fault word
};

SCCL_HOST_DEVICE inline size_t syncFreeSlotWords(size_t capacity) {
  return kSlotHeaderWords + capacity;
}

// ranges[2r, 2r+1] = partitions of cyclicPartition(r, sequence): every rank's range at this call.
SCCL_HOST_DEVICE inline void syncFreeCallRanges(const uint64_t* partitions, int nranks,
                                                uint64_t sequence, uint64_t* ranges) {
  for (int r = 0; r < nranks; ++r) {
    const size_t p = cyclicPartition(r, sequence, nranks);
    ranges[2 * r] = partitions[2 * p];
    ranges[2 * r + 1] = partitions[2 * p + 1];
  }
}

// The call's status from the gathered headers and the non-finite policy; *raise = the fault word
// to record (0: none). `fault` is the sticky word as it stands: an earlier fault fails the call.
SCCL_HOST_DEVICE inline uint32_t syncFreeDecide(const int64_t* gathered, int nranks,
                                                size_t capacity, uint64_t fingerprint,
                                                uint64_t sequence, const uint64_t* ranges,
                                                bool nonfinite_is_error, uint64_t fault,
                                                uint64_t* raise) {
  *raise = 0;
  if (fault != 0) return kSyncFreeFailed;
  const SlotHeaderVerdict verdict = checkSlotHeaderWords(
      gathered, syncFreeSlotWords(capacity), nranks, capacity, fingerprint, sequence, ranges);
  if (verdict.fault != SlotFault::None) {
    *raise =
        encodeAsyncFault(verdict.fault == SlotFault::OtherCall ? AsyncFault::OtherCall
                                                               : AsyncFault::CountAboveCapacity,
                         verdict.rank, sequence);
    return kSyncFreeFailed;
  }
  if (verdict.first_nonfinite_rank < 0) return kSyncFreeCompletes;
  if (!nonfinite_is_error) return kSyncFreeDiscarded;
  *raise = encodeAsyncFault(AsyncFault::NonFinite, verdict.first_nonfinite_rank, sequence);
  return kSyncFreeFailed;
}

// After the gather: a peer index that failed its check (bad != 0) fails a call that was going to
// complete or be discarded.
SCCL_HOST_DEVICE inline uint32_t syncFreeSettle(uint32_t bad, uint32_t status, uint64_t sequence,
                                                uint64_t* raise) {
  *raise = 0;
  if (bad == 0 || status == kSyncFreeFailed) return status;
  *raise = encodeAsyncFault(AsyncFault::IndexOutOfRange, -1, sequence);
  return kSyncFreeFailed;
}

// k' of a call: the gathered counts, each capped at the capacity (a larger claim failed the call).
SCCL_HOST_DEVICE inline uint64_t syncFreeGlobalCount(const int64_t* gathered, int nranks,
                                                     size_t capacity) {
  uint64_t k_global = 0;
  for (int r = 0; r < nranks; ++r) {
    const uint64_t k = uint64_t(gathered[size_t(r) * syncFreeSlotWords(capacity)]);
    k_global += k < capacity ? k : capacity;
  }
  return k_global;
}

// The end of a call (after its output): a completed call updates the threshold (rule not null:
// the scaling rule; null: a fixed threshold), moves ExDyna's boundaries (rebalance not null;
// exdyna: 4 n words, partitions rewritten), is counted into the totals and advances the call
// number, as the host reduction's completed calls do (a discarded or failed one leaves the next
// call's ranges where they were; a discarded one is counted).
SCCL_HOST_DEVICE inline void syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w,
                                             uint32_t status, uint64_t k_target,
                                             const ScalingRule* rule,
                                             const ExDynaRebalanceRule* rebalance) {
  const size_t n = size_t(w.nranks);
  if (status == kSyncFreeCompletes) {
    const uint64_t k_global = syncFreeGlobalCount(gathered, w.nranks, w.capacity);
    w.totals->last_threshold = *w.threshold;
    if (rule != nullptr) *w.threshold = scaledThreshold(*rule, *w.threshold, k_global, k_target);
    if (rebalance != nullptr) {
      int64_t* blocks = w.exdyna;
      int64_t* first_block = w.exdyna + n;
      int64_t* ks = w.exdyna + 2 * n;
      uint64_t* counts = reinterpret_cast<uint64_t*>(w.exdyna + 3 * n);
      for (size_t r = 0; r < n; ++r) {
        const uint64_t k = uint64_t(gathered[r * syncFreeSlotWords(w.capacity)]);
        counts[r] = k < w.capacity ? k : w.capacity;
      }
      exdynaRebalance(*rebalance, counts, *w.sequence, blocks, first_block, ks);
      for (size_t p = 0; p < n; ++p) {
        exdynaPartitionBounds(*rebalance, blocks, first_block, p, &w.partitions[2 * p],
                              &w.partitions[2 * p + 1]);
      }
    }
    const double error = k_target == 0 ? 0.0 : double(k_global) / double(k_target) - 1.0;
    w.totals->sum_abs_density_error += error < 0 ? -error : error;
    ++w.totals->completed;
    ++*w.sequence;
  } else if (status == kSyncFreeDiscarded) {
    ++w.totals->discarded;
  }
}

}  // namespace sccl
