// What the device calls that read nothing back share (S2 with its "topk" selection,
// sketch_call.cc; CLT-k, resident_gather.cc; both on device buffers): the words they keep after
// their plan in the kernels' memory (the statistics' totals, the call's status), the settling of
// the call by the kernels (kernels/shared/plan_settle.h) with the residual put back unless it
// completes, and those totals read when the statistics are asked for. A fault is sticky on the
// device: every later call fills recvbuf with NaN and changes nothing until scclSparsifierReset,
// so every rank keeps making the same collectives (a host that refused calls once it saw the
// fault would leave the ranks that had not seen it yet waiting in a collective);
// scclSparsifierGetAsyncError reports it without waiting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "kernels/kernels.h"

namespace sccl {

// The totals, the call number of the last completed call, the call's status.
struct SettleWords {
  SyncFreeTotals* totals;
  uint64_t* last_completed;
  uint32_t* status;
};
inline constexpr size_t kSettleWordsBytes = sizeof(SyncFreeTotals) + 2 * sizeof(uint64_t);
inline SettleWords settleWordsAt(void* at) {
  char* base = static_cast<char*>(at);
  return SettleWords{reinterpret_cast<SyncFreeTotals*>(base),
                     reinterpret_cast<uint64_t*>(base + sizeof(SyncFreeTotals)),
                     reinterpret_cast<uint32_t*>(base + sizeof(SyncFreeTotals) + sizeof(uint64_t))};
}

// The totals start again (zero calls; the threshold NaN: none yet) where `words` are new memory
// or the sparsifier starts again (call number 0); ctx's settled_plan / settled_first_call record
// it.
scclResult_t startSettledTotals(const SparseCall& call, const void* words_at, SettleWords words);

// After the call's output: the call's status, the sticky fault, the totals and recvbuf set by
// the kernels (settlePlan with a's plan, checks and threshold rule; the rest is the call's and
// `words`), then, with error feedback, the residual the call started from copied into the
// accumulator unless the call completes (the caller swaps them as always).
scclResult_t settleCall(const SparseCall& call, const StagedVectors& vectors, SettleWords words,
                        PlanSettleArgs a);

// The totals and the last call's status and plan words (`plan_words` long at `plan`, the totals
// at `words_at`) read back after a wait; nothing (false) before the first settled call.
struct SettledRead {
  bool any = false;
  SyncFreeTotals totals;
  uint64_t last_completed = 0;
  uint32_t status = 0;
  std::vector<uint64_t> plan;
};
scclResult_t readSettled(const ReductionContext& ctx, DeviceStaging& staging, const void* plan,
                         size_t plan_words, const void* words_at, SettledRead* out);

}  // namespace sccl
