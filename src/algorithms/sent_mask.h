// scclSparsifierMaskSent: zero, in a caller's buffer of the sparsifier's count (host memory, any
// gradient dtype), the elements the last call's output carries. Each reduction names its mask in
// the registry (ReductionEntry::mask_sent); the sparsifier remembers the mask of its last
// completed call (scclSparsifier::last_call_mask, in the sparsifier above).
#pragma once

#include "sparsecoll/sparsecoll.h"

namespace sccl {

struct ReductionContext;

// The dense reduction: every element.
scclResult_t maskEverything(const ReductionContext& ctx, void* buffer, scclDataType_t dtype);
// The gather and sync_free reductions: the last call's global index list (ctx.global_indices).
scclResult_t maskGlobalIndices(const ReductionContext& ctx, void* buffer, scclDataType_t dtype);

}  // namespace sccl
