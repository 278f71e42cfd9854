// The two communicators a communicator's nodes split into (comm.h node_of_rank), made once per
// communicator at its first use and shared by every "hierarchy": "node" sparsifier on it
// (sparsifier/node_hierarchy.h), so that a model of many buckets does not open two new
// communicators per bucket:
//   intra  the ranks of this rank's node, in rank order;
//   inter  the ranks with this rank's local index (its position in its node), one per node, in
//          node order.
#pragma once

#include <memory>

#include "comm/comm.h"

namespace sccl {

struct NodeSplit {
  scclComm* intra = nullptr;
  scclComm* inter = nullptr;
  int nodes = 1;
  int local_ranks = 1;
  int local_rank = 0;

  NodeSplit() = default;
  NodeSplit(const NodeSplit&) = delete;
  NodeSplit& operator=(const NodeSplit&) = delete;
  ~NodeSplit();
};

// How many nodes the communicator's node map holds and how many ranks each (the same map on
// every rank, so the same answer): *per_node is the first node's count, *equal whether every
// node holds that many.
void countNodes(const scclComm& comm, int* nodes, int* per_node, bool* equal);

// The communicator's split: made by two scclCommSplit-style splits the first time (collective:
// every rank must reach it at the same call, as a sparsifier's creation does), the same object
// afterwards. Nodes of different rank counts are scclInvalidUsage on every rank (they all see the
// same node map), naming the counts; nothing is kept then.
scclResult_t nodeSplitOf(scclComm* comm, std::shared_ptr<NodeSplit>* out);

}  // namespace sccl
