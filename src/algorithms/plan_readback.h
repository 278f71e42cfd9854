// The plan of a device-resident call (kernels/shared/gather_plan.h's layout), shared by the
// resident gather (resident_gather.cc) and union (resident_union.cc) calls: its inputs (every
// rank's range, the call's identity), its read-back into page-locked memory with the one wait,
// and the host's answer to a plan whose checks failed, with the host reduction's codes and texts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "kernels/shared/gather_plan.h"

namespace sccl {

// words[2r], words[2r + 1] = begin and end of rank r's range at this call (2 n words).
void writeCallRanges(const ReductionContext& ctx, uint64_t* words);

// The plan parameters every resident call shares: this rank's fingerprint, call number, k, the
// rank count and its rank (the window and selector fields left at their defaults).
GatherPlanParams callPlanParams(const ReductionContext& ctx);

// *host_plan = the plan (gatherPlanWords(nranks) words of the kernels' memory at `plan`) in the
// staging's page-locked plan buffer, after the call's stream has run up to it.
scclResult_t readPlan(SparseCall& call, const void* plan, size_t nranks,
                      const uint64_t** host_plan);

// A plan that passed: every rank's count into ctx.rank_counts, this rank's, the largest and the
// global list's length into the call (the statistics' k).
void adoptPlanCounts(SparseCall& call, const uint64_t* plan);

// A plan whose checks failed or found non-finite values: the non-finite policy (the call is then
// discarded, call.step_discarded, or refused), or the failed check's error. scclSuccess with
// *handled false for a plan that passed.
scclResult_t applyPlanStatus(SparseCall& call, const uint64_t* plan, bool* handled);

}  // namespace sccl
