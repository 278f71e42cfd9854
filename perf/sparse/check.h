// The -c check pass of sparse_allreduce_perf: a fresh sparsifier per algorithm, one call on the
// iteration-0 gradients, and the output compared bit for bit.
//
// Every rank hashes its whole output; the hashes are all-gathered and any rank that differs from
// rank 0 counts as one wrong. Each rank then rebuilds every rank's gradient in its own slice of
// the index space (count / n elements; all slices together cover the vector once) and compares
// its output there with a model of the first call from a fresh state (residual zero, so the
// accumulated gradient is the gradient; the threshold is the estimator's initial one, read back
// with scclSparsifierGetStats):
//   dense           everything, rank-order sum
//   topk            union over ranks of each rank's exact top-k of its whole vector (ties at the
//                   k-th magnitude go to the lower indices), rank-order sum there
//   cltk            the same with rank 0 (the leader of iteration 0) as the only selector
//   hard_threshold  union over ranks of |g| >= threshold on the whole vector
//   micro           |g_p| >= threshold where p owns the index: equal partitions, rank p takes
//                   partition p at iteration 0 (count / n, one more for the first count % n)
// The sum is float32 (float64 for double) in rank order, divided by n for avg, rounded once to
// the dtype; dense float16/bfloat16 rounds the sum, then the average again (the dense path).
// exdyna, the sync-free presets (micro_sync_free, exdyna_sync_free: MiCRO / ExDyna partitions
// with a per-rank cap), and any preset whose axes the -C config overrides, get a weaker check:
// every non-zero output is exactly the rank-order sum there, some rank's |g| reaches the threshold
// (fixed and scaling estimators), and there are at most k' non-zeros (for the exclusive
// partitions of exdyna and the sync-free presets, k' = sum of the k_i).
// For the exact models the selected count must also equal k'. All counts are summed over ranks.
// A -C config with "hierarchy": "node" is checked for identical bits on every rank only (its
// node sums select and add in an order no flat model follows; tests/unit/test_node_hierarchy.cc
// checks it bitwise against the flat preset run on the node sums).
// -g 1 (CheckCase::device set): the checked call runs on device buffers (the dense row as
// scclAllReduce, whose facts are those of the dense preset: every index selected) and its output
// is copied back to the host before the same comparisons. A graph replay row (<preset>:graph) is
// checked as its preset, with the row's config (streamOrdered = 1): the checked first call is
// eager, as every stream-ordered sparsifier's first call must be, and its threshold is the one the
// fresh sparsifier reports (after the call, the statistics hold the next call's).
//   s2 (and the -S sweep rows)  rebuilt from the public building blocks: each rank marks its
//                   blocks (top-K by L2 norm, or non-zero), scclCountSketchEncode of its
//                   gradient, scclAllReduce of the tables (the same rank-order sum) and of the
//                   bitmaps (int32), scclCountSketchDecode over the union, divided by n for avg
//                   and rounded once to the dtype; the whole output must match bit for bit, and
//                   k' must be the number of elements in the union of the blocks.
#pragma once

#include <cstdint>
#include <string>

#include "sparse/bench.h"
#include "sparse/inputs.h"

namespace sccl_perf {

class DeviceCalls;

struct CheckCase {
  const SparseOptions& options;
  const Rank& rank;
  size_t count;
  double density;
  double scale;  // of the gradients (gradientScale)
  const std::string& algorithm;
  const GradientPool& pool;  // this rank's, generated for (count, scale)
  void* recv;                // count elements of scratch (host memory)
  DeviceCalls* device;       // -g 1: the rank's device buffers; null on the host path
};

// Returns #wrong summed over ranks (the same on every rank).
uint64_t checkFirstCall(const CheckCase& c);

// Decode error of a sketch row: a fresh sparsifier without error feedback, `calls` calls on the
// iteration 0, 1, ... gradients; the relative L2 error ||out - target|| / ||target|| over all of
// them, where target is the exact sum over ranks of each rank's gradient in its own marked
// blocks (what the sketch carries). The same value on every rank.
double sketchDecodeError(const CheckCase& c, int calls);

}  // namespace sccl_perf
