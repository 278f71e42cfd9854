// The reductions listed in registry.cc, one file each.
#pragma once

#include "algorithms/algorithm.h"

namespace sccl {
scclResult_t runDenseReduction(SparseCall& call);   // dense_reduction.cc
scclResult_t runGatherReduction(SparseCall& call);  // gather_reduction.cc
scclResult_t runSketchReduction(SparseCall& call);  // sketch_reduction.cc
scclResult_t prepareSketchReduction(scclSparsifier& sp);
scclResult_t runSyncFreeReduction(SparseCall& call);  // sync_free_reduction.cc
scclResult_t prepareSyncFreeReduction(scclSparsifier& sp);
}  // namespace sccl
