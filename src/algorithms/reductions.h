// The reductions listed in registry.cc, one file each.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"

namespace sccl {
scclResult_t runDenseReduction(SparseCall& call);   // dense_reduction.cc
// Dense after a sparse preset (auto's switch): residual + gradient all-reduced once, the residual
// (the sparsifier's host residual, ctx.count elements of ctx.acc_dtype) zeroed
// (dense_reduction.cc).
scclResult_t runDenseReductionWithResidual(SparseCall& call, void* residual);
scclResult_t runGatherReduction(SparseCall& call);  // gather_reduction.cc
scclResult_t runSketchReduction(SparseCall& call);  // sketch_reduction.cc
scclResult_t prepareSketchReduction(const ReductionContext& ctx);
// scclSparsifierMaskSent for s2: the blocks of the last call's union bitmap.
scclResult_t maskSketchBlocks(const ReductionContext& ctx, void* buffer, scclDataType_t dtype);
// The elements of those blocks, ascending: what maskGlobalIndices masks in their place once the
// sketch's state is gone (a preset switch right after the call).
void sketchSentIndices(const ReductionContext& ctx, std::vector<int64_t>* out);
// The count sketch's width c: ceil(lambda k) for "topk" block selection, ceil(lambda max_r k_r)
// of the call for "nonzero" (k_max: elements in the blocks the busiest rank marked); at least 1,
// at most kMaxSketchWidth. Also the cost model's (tuning/wire_plan.cc).
struct ResolvedSparseConfig;
uint64_t sketchTableWidth(const ResolvedSparseConfig& config, uint64_t k_target, uint64_t k_max);
scclResult_t runSyncFreeReduction(SparseCall& call);  // sync_free_reduction.cc
scclResult_t prepareSyncFreeReduction(const ReductionContext& ctx);
}  // namespace sccl
