// The one read-back of a device-resident call's plan (kernels/shared/gather_plan.h's layout),
// shared by the resident gather (resident_gather.cc) and union (resident_union.cc) calls: the
// plan copied into page-locked memory, the one wait, and the host's answer to a plan whose
// checks failed, with the host reduction's codes and texts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.h"

namespace sccl {

// *host_plan = the plan (gatherPlanWords(nranks) words of the kernels' memory at `plan`) in the
// staging's page-locked plan buffer, after the call's stream has run up to it.
scclResult_t readPlan(SparseCall& call, const void* plan, size_t nranks,
                      const uint64_t** host_plan);

// A plan whose checks failed or found non-finite values: the non-finite policy (the call is then
// discarded, call.step_discarded, or refused), or the failed check's error. scclSuccess with
// *handled false for a plan that passed.
scclResult_t applyPlanStatus(SparseCall& call, const uint64_t* plan, bool* handled);

}  // namespace sccl
