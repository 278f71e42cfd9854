// The plan of a device-resident S2 call (algorithms/sketch_call.cc): from every rank's header
// (all-gathered) and the union of the block bitmaps (all-reduced, uint8 max) the checks of the
// host reduction in its order (sketch_reduction.cc: the call headers, then the union's bytes),
// every rank's count of marked elements and the union's. The decisions are one function for both
// backends (finishSketchPlan); the pass over the union (its elements, its first byte other than
// 0 or 1) is each backend's, with integer results only, so both plans agree word for word. The
// host reads the plan back once per call (64 + 16 n bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/shared/gather_plan.h"
#include "kernels/shared/host_device.h"

namespace sccl {

// A rank's header, the layout of the other reductions' call header (algorithms/call_header.h):
// the elements in its marked blocks, its NaN/Inf count, the config fingerprint, the call number.
inline constexpr size_t kSketchHeaderWords = 4;
enum SketchHeaderWord : size_t {
  kSketchElements = 0,
  kSketchNonFinite = 1,
  kSketchFingerprint = 2,
  kSketchSequence = 3,
};

// The elements of block b of a vector of `count` in blocks of `block`.
SCCL_HOST_DEVICE constexpr uint64_t sketchBlockElements(size_t b, size_t count, size_t block) {
  return (b + 1) * block < count ? block : count - b * block;
}

// The plan buffer: the plan, then the pass's scratch (the union's marked elements, the lowest
// block whose union byte is not 0 or 1, set by the backend's pass) and this rank's cut-off (the
// squared norm of its last kept block as a double's bits, 0 for the "nonzero" selection: written
// by the call's selection, not sent).
SCCL_HOST_DEVICE constexpr size_t sketchPlanWords(size_t nranks) {
  return gatherPlanWords(nranks) + 3;
}
struct SketchPlanScratch {
  uint64_t* union_elements;
  uint64_t* bad_block;  // kNoSoleSelector: none
  uint64_t* cutoff;
};
SCCL_HOST_DEVICE inline SketchPlanScratch sketchPlanScratch(uint64_t* plan, size_t nranks) {
  uint64_t* base = plan + gatherPlanWords(nranks);
  return SketchPlanScratch{base, base + 1, base + 2};
}

// The plan once the pass ran: checkPlanInputs' checks in its order (another call or config,
// marked elements above the vector, non-finite values), then a union byte other than 0 or 1
// (kPlanBadBitmap, detail_a the block: some rank sent it, which one the max all-reduce does not
// tell); then every rank's marked elements as its count, kPlanMaxK the largest, kPlanEdge this
// rank's cut-off (the scratch's) and kPlanKGlobal the union's marked elements.
SCCL_HOST_DEVICE inline void finishSketchPlan(const uint64_t* headers, const GatherPlanParams& p,
                                              size_t count, uint64_t* plan) {
  const SketchPlanScratch s = sketchPlanScratch(plan, p.nranks);
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  const auto header_at = [&](uint64_t r) { return headers + r * kSketchHeaderWords; };
  const auto claim_at = [&](uint64_t r) { return header_at(r)[kSketchElements]; };
  // checkPlanInputs' order, every rank's range the whole vector.
  PlanCheck check;
  for (uint64_t r = 0; r < p.nranks && check.status == kPlanOk; ++r) {
    const uint64_t* h = header_at(r);
    if (h[kSketchFingerprint] != p.fingerprint || h[kSketchSequence] != p.sequence) {
      check = PlanCheck{kPlanMismatch, r, h[kSketchSequence], h[kSketchFingerprint]};
    } else if (claim_at(r) > count) {
      check = PlanCheck{kPlanTooMany, r, claim_at(r), count};
    }
  }
  for (uint64_t r = 0; r < p.nranks && check.status == kPlanOk; ++r) {
    const uint64_t nonfinite = header_at(r)[kSketchNonFinite];
    if (nonfinite > 0) check = PlanCheck{kPlanNonFinite, r, nonfinite, 0};
  }
  if (check.status == kPlanOk && *s.bad_block != kNoSoleSelector) {
    check = PlanCheck{kPlanBadBitmap, 0, *s.bad_block, 0};
  }
  // The cut-off was stored as a double (markTopBlocks): its bytes, read without aliasing it.
  uint64_t cutoff = 0;
  memcpy(&cutoff, s.cutoff, sizeof(cutoff));
  writePlan(check, header_at(p.self)[kSketchNonFinite], claim_at, p.nranks, cutoff, plan);
  if (check.status == kPlanOk) plan[kPlanKGlobal] = *s.union_elements;
}

}  // namespace sccl
