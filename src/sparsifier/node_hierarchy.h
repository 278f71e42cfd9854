// "hierarchy": "node": the sparse all-reduce of a communicator whose nodes hold several ranks.
//
// With N nodes of L ranks each (the communicator's node detection, comm.h node_of_rank), local
// rank i of every node owns chunk i of the vector, [i c, min((i + 1) c, count)) with
// c = ceil(count / L). One call:
//   1. the ranks agree on the call over the whole communicator (as every sparse call does);
//   2. reduce-scatter inside the node (dense, rank order): local rank i holds the node's sum of
//      chunk i (count x element size x (L-1)/L out per rank, inside the node);
//   3. the non-finite count of that sum is all-reduced over the communicator (8 bytes), so every
//      rank applies the policy to the same step (propagate: recvbuf NaN, nothing else changes;
//      error: scclInvalidArgument on every rank, nothing changes);
//   4. the preset (any of them, flat) runs across nodes among the ranks with local index i, over
//      chunk i, with its own residual: what crosses the node boundary is the preset's traffic on
//      a vector L times shorter, once per node instead of once per rank;
//   5. all-gather inside the node of the reduced chunks completes the vector (again count x
//      element size x (L-1)/L per rank, inside the node); scclAvg divides by the communicator's
//      rank count at the end, element by element.
// Every rank ends with the same bits (the inner all-reduce is identical across its ranks and the
// all-gather copies); error feedback keeps each chunk's unsent node sum in the residual of the
// rank that owns the chunk. The communicators inside and across nodes are the communicator's
// node split (comm/node_split.h), made at the first such sparsifier and shared by the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/aligned_buffer.h"
#include "sparsecoll/sparsecoll.h"
#include "sparsifier/hierarchy_memory.h"

struct scclComm;
struct scclSparsifier;

namespace sccl {

struct NodeSplit;

struct NodeHierarchy {
  std::shared_ptr<NodeSplit> split;  // keeps intra and inter alive while this sparsifier lives
  scclComm* intra = nullptr;         // this node's ranks, by rank in the communicator
  scclComm* inter = nullptr;         // the ranks with this local index, one per node, by node
  scclSparsifier* inner = nullptr;   // the preset over this rank's chunk on `inter`; null if empty
  int nodes = 1;
  int local_ranks = 1;
  int local_rank = 0;
  size_t chunk = 0;         // c = ceil(count / L), the reduce-scatter's block
  size_t chunk_begin = 0;   // this rank's chunk [chunk_begin, chunk_begin + chunk_length)
  size_t chunk_length = 0;  // c, shorter (or 0) for the last local ranks when L does not divide
  AlignedBuffer padded;     // L x c elements when count < L x c: the padded input and output
  AlignedBuffer node_sum;   // c elements: the node's sum of this chunk, then its reduction
  std::unique_ptr<HierarchyMemory> host;  // over padded and node_sum
  // The device buffers, from the first call on device buffers until scclSparsifierReset; while
  // they exist, calls on host buffers are refused (the inner residual is in device memory).
  std::unique_ptr<HierarchyMemory> device;
  // Every rank's k_i of the last call, by rank in the communicator.
  std::vector<uint64_t> rank_counts;
  uint64_t bytes_inside_node = 0;  // this rank's bytes sent inside the node in the last call

  NodeHierarchy() = default;
  NodeHierarchy(const NodeHierarchy&) = delete;
  NodeHierarchy& operator=(const NodeHierarchy&) = delete;
  ~NodeHierarchy();
};

// Collective over sp.comm, at creation (sp.count, sp.dtype and sp.config set): the splits, the
// inner sparsifier and the buffers. Nodes of different rank counts are scclInvalidUsage on every
// rank (they see the same node map), naming the counts.
scclResult_t buildNodeHierarchy(scclSparsifier& sp);

// One hierarchical call (steps 1-5 above) on the buffers `memory` holds (host, or device ordered
// on the stream given to memory.setStream); sp.stats and its rank counts describe it afterwards
// (bytes across nodes in bytesSent/bytesReceived, inside in the node fields).
scclResult_t hierarchicalAllreduce(scclSparsifier& sp, const void* sendbuf, void* recvbuf,
                                   scclRedOp_t op, HierarchyMemory& memory);

// On host buffers: refused (scclInvalidUsage, nothing changed) while the device buffers exist.
scclResult_t hierarchicalAllreduceOnHost(scclSparsifier& sp, const void* sendbuf, void* recvbuf,
                                         scclRedOp_t op);

// What the device half provides (cuda/'s, or the tests' fake device): whether the inner preset
// runs on device buffers (scclInvalidUsage naming what is missing, no side effect), and the
// hierarchy's device memory.
struct HierarchyDevice {
  std::function<scclResult_t(const scclSparsifier& inner, void* stream)> check;
  std::function<scclResult_t(scclSparsifier& sp, std::unique_ptr<HierarchyMemory>* out)> create;
};

// On device buffers, ordered on `stream`. The first such call checks the inner preset on every
// rank with a chunk and agrees on the verdict over the communicator (a refusal is
// scclInvalidUsage on every rank with nothing changed; so is a sparsifier whose earlier calls ran
// on host buffers), then creates the device memory.
scclResult_t hierarchicalAllreduceOnDevice(scclSparsifier& sp, const void* sendbuf, void* recvbuf,
                                           scclRedOp_t op, void* stream,
                                           const HierarchyDevice& device);

}  // namespace sccl
