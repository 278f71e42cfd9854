// The cost model's price of a "hierarchy": "node" call (sparsifier/node_hierarchy.h), from the
// flat preset's prediction over the chunk across nodes (tuning/cost_model.h) and the dense steps
// inside the node, each on its own link:
//   inside the node (L ranks, the node's link): the reduce-scatter and the all-gather of the
//     count-element vector, priced as one all-reduce of it (Rabenseifner's all-reduce is exactly
//     those two halves), plus the 8-byte verdict all-reduce and the 24-byte statistics
//     all-gather of every call;
//   across nodes (N ranks, one per node, the link between nodes): the flat preset over a chunk of
//     c = ceil(count / L) elements, its local work per element and per entry as calibrated;
//   the whole communicator: the 8-byte non-finite count all-reduce.
// Ranks that share a host also share its cores (LocalWork::ranks_per_machine), as for the flat
// prediction. Deterministic in its inputs, so every rank predicts the same.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"
#include "tuning/cost_model.h"
#include "tuning/link_model.h"

namespace sccl {

struct NodeLayout {
  int nodes = 1;
  int local_ranks = 1;
};

struct HierarchyLinks {
  LinkModel inside;  // between the ranks of one node
  LinkModel across;  // between the nodes (the ranks of one local index)
  LinkModel whole;   // the communicator's own (the non-finite count)
};

// flat_config: the preset as it runs across nodes (hierarchy "flat").
CallPrediction predictHierarchicalCall(const ResolvedSparseConfig& flat_config, size_t count,
                                       scclDataType_t dtype, const NodeLayout& layout,
                                       const HierarchyLinks& links, const LocalWork& local);

}  // namespace sccl
