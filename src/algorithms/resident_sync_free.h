// The device-resident sync_free call: micro_sync_free and exdyna_sync_free with slots, counts,
// threshold, partitions and every decision in the kernels' memory, so that a call reads nothing
// back (resident_sync_free.cc has the steps and bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"
#include "kernels/device_staging.h"
#include "kernels/kernels.h"

namespace sccl {

// The sparsifier's resident sync_free state, set up at its first call on device buffers
// (prepareResidentSyncFree): every size follows from the capacity, fixed at creation, so later
// calls allocate nothing (and can be captured in a CUDA graph).
struct ResidentSyncFree {
  bool ready = false;
  size_t capacity = 0;      // indices per slot, for the highest density the sparsifier may use
  size_t select_items = 0;  // positions the selection may scan: the largest range a rank can get
  int64_t* slot = nullptr;
  int64_t* gathered = nullptr;
  void* values = nullptr;
  SyncFreeWords words;                   // words.fault: the sticky fault word's device address
  const uint64_t* fault_host = nullptr;  // the same word as the host reads it, without waiting
  bool rebalances = false;               // exdyna: the partitions move on the device
  ExDynaRebalanceRule rebalance;
  // Stream-ordered (config streamOrdered): a captured graph holds fixed pointers, so residual and
  // accumulator keep their roles and a completed call copies the accumulator into the residual;
  // otherwise the two buffers trade roles and only a call that did not complete copies (back).
  bool fixed_buffers = false;
  double uploaded_threshold = 0;  // a fixed threshold as last sent to the device
  uint64_t first_call = 0;        // the call number the state started at (a loaded checkpoint's)
  // Host words (a call on host buffers: the CPU kernels on host staging, which run as they are
  // called): the call reads its words between its steps, so the pass that accumulates also
  // selects the candidates at the words' threshold in the words' range (the selection then reads
  // those instead of the range), an estimator that fits the call's data sets the threshold after
  // the pass, and the caller sees the call's decision before anything is written.
  bool host_words = false;
  int64_t* candidates = nullptr;  // host words: the pass's candidates, candidate_room of them
  size_t candidate_room = 0;
  size_t candidate_count = 0;  // host words: the pass's count of qualifying entries
};

// The slots' capacity of a sparsifier on device buffers: for the highest density it may use
// (scclSparsifierSetDensity refuses more), so that a warm-up from a higher start keeps it.
size_t residentSyncFreeCapacity(const ReductionContext& ctx);

// Allocates the state from `staging` (the kernels' memory) for slots of `capacity` indices and
// uploads the search space's partitions, the estimator's threshold and the call number; waits
// once. fault_host/fault_device: the sparsifier's fault word (0), as the host reads it and as the
// kernels write it. host_words: the staging is host memory and the kernels the CPU's (above).
scclResult_t prepareResidentSyncFree(const ReductionContext& ctx, DeviceStaging& staging,
                                     size_t capacity, const uint64_t* fault_host,
                                     uint64_t* fault_device, bool fixed_buffers, bool host_words,
                                     ResidentSyncFree* state);

// Host words: the words a call starts from (threshold, call number, partitions, ExDyna's
// blocks) written again from the estimator and the search space, which carry them between calls
// on host buffers (they observe each completed call; a reset, a checkpoint load or a density
// change moves them).
void writeResidentSyncFreeWords(const ReductionContext& ctx, ResidentSyncFree& state);

// One call on call.kernels / call.device / call.stream (set): residual and accumulator in
// `vectors` (swapped here unless fixed_buffers), collectives through `exchange`. Nothing is read
// back: the outcome stays on the device (residentSyncFreeStats, residentSyncFreeAsyncError).
// The two halves below, one after the other.
scclResult_t runResidentSyncFree(SparseCall& call, StreamExchange& exchange,
                                 ResidentSyncFree& state, StagedVectors& vectors);

// Steps 1-6: accumulate, select into the slot, all-gather the slots, check them and gather the
// values at every slot's indices; the call's decision is then in *state.words.status.
scclResult_t residentSyncFreeSelectAndExchange(SparseCall& call, StreamExchange& exchange,
                                               ResidentSyncFree& state, StagedVectors& vectors);

// Steps 7-10: all-reduce the values, write the output and the residual, update the threshold and
// the partitions and count the call, each as the status word decides.
scclResult_t residentSyncFreeReduceAndCommit(SparseCall& call, StreamExchange& exchange,
                                             ResidentSyncFree& state, StagedVectors& vectors);

// The statistics and rank counts of the calls so far, from the device: the last call's headers,
// the threshold and the totals into *stats (the sparsifier's) and ctx.rank_counts. Waits for
// `staging`'s stream (the caller has made the calls' work visible to it).
scclResult_t residentSyncFreeStats(const ReductionContext& ctx, DeviceStaging& staging,
                                   const ResidentSyncFree& state, scclSparseStats_t* stats);

// What a checkpoint needs of the calls so far, from the device's words into the host's objects
// (which the resident calls do not read after prepareResidentSyncFree): the estimator adopts
// the next call's threshold (the scaling rule's; a fixed one has none to adopt), ExDyna's search
// space the partitions' blocks, and *call_number is the number of the next call (completed calls;
// the host counts every call it enqueued, discarded ones too). A checkpoint loaded from them
// starts the next device call from the same threshold, partitions and call number
// (prepareResidentSyncFree uploads them), or runs on host buffers as the host reduction would
// have. Waits for `staging`'s stream (the caller has made the calls' work visible to it).
scclResult_t residentSyncFreeCheckpointState(const ReductionContext& ctx, DeviceStaging& staging,
                                             const ResidentSyncFree& state, uint64_t* call_number);

// The sticky fault (scclSparsifierGetAsyncError): *result is scclSuccess, or the fault's code
// with its text set for scclGetLastError. Never waits.
scclResult_t residentSyncFreeAsyncError(const ResidentSyncFree& state, scclResult_t* result);

}  // namespace sccl
