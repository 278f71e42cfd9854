#include "comm/node_split.h"

#include <map>
#include <string>

#include "comm/comm_split.h"
#include "core/error.h"

namespace sccl {
namespace {

std::map<int, int> nodeSizes(const scclComm& comm) {
  std::map<int, int> sizes;
  for (int node : comm.node_of_rank) ++sizes[node];
  return sizes;
}

// Every node must hold the same number of ranks; every rank sees the same map, so every rank
// returns the same verdict.
scclResult_t checkEqualNodes(const scclComm& comm, int* nodes, int* per_node) {
  bool equal = true;
  countNodes(comm, nodes, per_node, &equal);
  if (!equal) {
    std::string listed;
    for (const auto& [node, ranks] : nodeSizes(comm))
      listed += (listed.empty() ? "" : ", ") + std::to_string(ranks);
    return fail(scclInvalidUsage,
                "hierarchy \"node\" needs the same number of ranks on every node; this "
                "communicator's %d nodes hold %s ranks (node detection: the host identity, "
                "SCCL_NODE_ID or SCCL_RANKS_PER_NODE); use hierarchy \"flat\"",
                *nodes, listed.c_str());
  }
  return scclSuccess;
}

}  // namespace

void countNodes(const scclComm& comm, int* nodes, int* per_node, bool* equal) {
  const std::map<int, int> sizes = nodeSizes(comm);
  *nodes = static_cast<int>(sizes.size());
  *per_node = sizes.empty() ? 0 : sizes.begin()->second;
  *equal = true;
  for (const auto& [node, ranks] : sizes) *equal = *equal && ranks == *per_node;
}

NodeSplit::~NodeSplit() {
  if (inter != nullptr) commDestroy(inter, false);
  if (intra != nullptr) commDestroy(intra, false);
}

scclResult_t nodeSplitOf(scclComm* comm, std::shared_ptr<NodeSplit>* out) {
  if (comm->node_split != nullptr) {
    *out = comm->node_split;
    return scclSuccess;
  }
  auto split = std::make_shared<NodeSplit>();
  SCCL_CHECK(checkEqualNodes(*comm, &split->nodes, &split->local_ranks));
  const int node = comm->node_of_rank[size_t(comm->rank)];
  for (int r = 0; r < comm->rank; ++r)
    split->local_rank += comm->node_of_rank[size_t(r)] == node ? 1 : 0;
  // The children inherit the communicator's settings; inside a node of threads they run on the
  // in-process transport, across nodes on the communicator's own (comm/comm_split.h).
  SCCL_CHECK(commSplit(comm, node, comm->rank, &split->intra, nullptr));
  SCCL_CHECK(commSplit(comm, split->local_rank, node, &split->inter, nullptr));
  comm->node_split = split;
  *out = std::move(split);
  return scclSuccess;
}

}  // namespace sccl
