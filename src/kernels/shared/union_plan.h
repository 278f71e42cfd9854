// The plan of a device-resident union call (algorithms/resident_union.cc: Top-k over a search
// space every rank shares): every rank's slot (its call header, its count, its ascending
// indices), all-gathered in one collective, checked as the host reduction checks its headers
// and index lists, and the union of the slices (sorted, without duplicates: the host's global
// list) with its length. The header part is one function for both backends; the union is built
// by each backend (CPU: a merge; CUDA: a radix sort and unique of the checked entries), with the
// same result. The host reads the plan back once per call (64 + 16 n bytes) to size the value
// all-reduce.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/gather_plan.h"
#include "kernels/shared/host_device.h"

namespace sccl {

// A slot: the record header (gather_plan.h's kRecord* words; kRecordReserved: the magnitude
// pattern of the rank's k-th entry, or of a threshold the kernels chose), the rank's count, then
// `capacity` indices (ascending, the first `count` used).
inline constexpr size_t kUnionSlotHeaderWords = kGatherRecordHeaderWords + 1;
inline constexpr size_t kUnionSlotCount = kGatherRecordHeaderWords;

SCCL_HOST_DEVICE constexpr size_t unionSlotWords(size_t capacity) {
  return kUnionSlotHeaderWords + capacity;
}

// The plan's header part from the nranks slots: checkPlanInputs (another call or config, a count
// above the rank's range, non-finite values) with a count above the slot's capacity refused too
// (kPlanTooMany, detail_b the capacity); then every rank's count, kPlanMaxK, kPlanEdge = this
// rank's reserved word (top-k: its k-th pattern; a threshold chosen on the device: its pattern;
// written whatever the status) and kPlanKGlobal = the sum of the counts (the union's length
// replaces it). Speculative slots (p.speculative: sized before the counts were known): a count
// above the capacity, where every check passed, is kPlanOverflow (kPlanRank the lowest such rank)
// with every rank's count and kPlanMaxK written, so that the call can size the slots exactly.
SCCL_HOST_DEVICE inline void planUnionHeaders(const uint64_t* slots, const GatherPlanParams& p,
                                              size_t capacity, const uint64_t* ranges,
                                              uint64_t* plan) {
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  const auto slot_at = [&](uint64_t r) { return slots + r * unionSlotWords(capacity); };
  const auto claim_at = [&](uint64_t r) { return slot_at(r)[kUnionSlotCount]; };
  PlanCheck check = checkPlanInputs(slot_at, claim_at, p, ranges, kNoIndexFault);
  uint64_t overflow = kNoSoleSelector;  // the lowest rank past a speculative slot, if any
  if (check.status == kPlanOk || check.status == kPlanNonFinite) {
    for (uint64_t r = 0; r < p.nranks; ++r) {
      if (claim_at(r) <= capacity) continue;
      if (p.speculative != 0 && check.status == kPlanOk) {
        overflow = r;
      } else if (p.speculative == 0) {
        check = PlanCheck{kPlanTooMany, r, claim_at(r), capacity};
      }
      break;
    }
  }
  writePlan(check, slot_at(p.self)[kRecordNonFinite], claim_at, p.nranks,
            slot_at(p.self)[kRecordReserved], plan);
  // This rank's reserved word whatever the status: a threshold the kernels chose (SIDCo's count
  // check) comes back with any plan, as the host run's estimator keeps it after any outcome.
  plan[kPlanEdge] = slot_at(p.self)[kRecordReserved];
  if (overflow != kNoSoleSelector) {
    plan[kPlanStatus] = kPlanOverflow;
    plan[kPlanRank] = overflow;
    plan[kPlanDetailA] = claim_at(overflow);
    plan[kPlanDetailB] = capacity;
  }
}

// After the union: its length, or the lowest rank whose slice failed (kNoIndexFault: none).
SCCL_HOST_DEVICE inline void finishUnionPlan(uint64_t length, uint32_t bad_rank, uint64_t* plan) {
  if (plan[kPlanStatus] != kPlanOk) return;
  if (bad_rank != kNoIndexFault) {
    plan[kPlanStatus] = kPlanBadIndex;
    plan[kPlanRank] = bad_rank;
    return;
  }
  plan[kPlanKGlobal] = length;
}

}  // namespace sccl
