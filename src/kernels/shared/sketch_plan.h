// The plan of a device-resident S2 call (algorithms/resident_sketch.cc): from every rank's record
// (its call header and its block bitmap, all-gathered in one collective) the union of the marked
// blocks and every rank's count of marked elements, with every peer's record checked first, in the
// host reduction's order (sketch_reduction.cc: the call headers, then the bitmap's bytes). The
// decisions are one function for both backends (finishSketchPlan); the passes over the bitmaps
// (the union, the counts, the byte check) are each backend's, with integer results only, so both
// plans agree word for word. The host reads the plan back once per call (64 + 16 n bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/gather_plan.h"
#include "kernels/shared/host_device.h"

namespace sccl {

// A rank's record: the gather record's header words (kRecordReserved: the rank's cut-off, the
// squared norm of its last kept block as a double's bits, 0 for the "nonzero" selection), then
// one byte per block (1: marked), padded with zeros to whole words.
SCCL_HOST_DEVICE constexpr size_t sketchRecordWords(size_t blocks) {
  return kGatherRecordHeaderWords + (blocks + 7) / 8;
}

// The elements of block b of a vector of `count` in blocks of `block`.
SCCL_HOST_DEVICE constexpr uint64_t sketchBlockElements(size_t b, size_t count, size_t block) {
  return (b + 1) * block < count ? block : count - b * block;
}

// The plan buffer: the plan, then the passes' scratch (every rank's marked elements, the union's,
// the lowest rank with a byte other than 0 or 1), zeroed by the backend before its passes.
SCCL_HOST_DEVICE constexpr size_t sketchPlanWords(size_t nranks) {
  return gatherPlanWords(nranks) + nranks + 2;
}
struct SketchPlanScratch {
  uint64_t* rank_elements;  // nranks words
  uint64_t* union_elements;
  uint64_t* bad_rank;  // kNoSoleSelector: none
};
SCCL_HOST_DEVICE inline SketchPlanScratch sketchPlanScratch(uint64_t* plan, size_t nranks) {
  uint64_t* base = plan + gatherPlanWords(nranks);
  return SketchPlanScratch{base, base + nranks, base + nranks + 1};
}

// The plan once the passes ran: checkPlanInputs' header checks (another call or config, then
// non-finite values), then a bitmap byte other than 0 or 1 (kPlanBadBitmap, the lowest such
// rank); then every rank's marked elements as its count, kPlanMaxK the largest, kPlanEdge this
// rank's cut-off bits and kPlanKGlobal the union's marked elements.
SCCL_HOST_DEVICE inline void finishSketchPlan(const uint64_t* records, const GatherPlanParams& p,
                                              size_t blocks, uint64_t* plan) {
  const SketchPlanScratch s = sketchPlanScratch(plan, p.nranks);
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  const size_t record_words = sketchRecordWords(blocks);
  const auto record_at = [&](uint64_t r) { return records + r * record_words; };
  const auto elements_at = [&](uint64_t r) { return s.rank_elements[r]; };
  // Every rank's count is computed from its bitmap, at most the vector: the range check of
  // checkPlanInputs cannot fail, so its ranges are not needed.
  PlanCheck check;
  for (uint64_t r = 0; r < p.nranks && check.status == kPlanOk; ++r) {
    const uint64_t* h = record_at(r);
    if (h[kRecordFingerprint] != p.fingerprint || h[kRecordSequence] != p.sequence) {
      check = PlanCheck{kPlanMismatch, r, h[kRecordSequence], h[kRecordFingerprint]};
    }
  }
  for (uint64_t r = 0; r < p.nranks && check.status == kPlanOk; ++r) {
    const uint64_t nonfinite = record_at(r)[kRecordNonFinite];
    if (nonfinite > 0) check = PlanCheck{kPlanNonFinite, r, nonfinite, 0};
  }
  if (check.status == kPlanOk && *s.bad_rank != kNoSoleSelector) {
    check = PlanCheck{kPlanBadBitmap, *s.bad_rank, 0, 0};
  }
  writePlan(check, record_at(p.self)[kRecordNonFinite], elements_at, p.nranks,
            record_at(p.self)[kRecordReserved], plan);
  if (check.status == kPlanOk) plan[kPlanKGlobal] = *s.union_elements;
}

}  // namespace sccl
