// ExDyna's block partitions as plain arrays, and its rebalancing pass (Alg. 3), compiled for the
// host and the device: the host search space (exdyna_partition.cc) runs it after every call, and
// the stream-ordered sync_free call (cuda/kernels/sync_free_stream_ordered.cu) runs the same
// function in a kernel on the all-gathered counts, so that exdyna_sync_free can be captured in a
// CUDA graph and still moves its boundaries exactly as the host would.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/host_device.h"
#include "kernels/shared/cyclic_partition.h"

namespace sccl {

// Everything of the pass that does not change between calls.
struct ExDynaRebalanceRule {
  int nranks = 1;
  double alpha = 1.05;      // rebalance_alpha: the imbalance that triggers a move
  int64_t move_blocks = 1;  // rebalance_move_blocks
  int64_t min_blocks = 1;   // min_blk: a partition never gives away its last blocks
  uint64_t block_size = 1;  // elements per block
  uint64_t remainder = 0;   // elements after the last block, in the last partition
  uint64_t count = 0;       // elements of the vector
};

// Partition p's range [*begin, *end) from blocks (blocks per partition) and first_block (index
// of each partition's first block).
SCCL_HOST_DEVICE inline void exdynaPartitionBounds(const ExDynaRebalanceRule& rule,
                                                   const int64_t* blocks,
                                                   const int64_t* first_block, size_t p,
                                                   uint64_t* begin, uint64_t* end) {
  *begin = uint64_t(first_block[p]) * rule.block_size;
  *end = uint64_t(first_block[p] + blocks[p]) * rule.block_size;
  if (p + 1 == size_t(rule.nranks)) *end += rule.remainder;
}

// Alg. 3 after the call at `iteration` in which rank r selected counts[r]: the counts in
// partition order (ks: nranks words of scratch), k_acc = k' / n, one pass over adjacent pairs
// (i, i + 1) moving move_blocks blocks towards the lighter partition when one is above alpha *
// k_acc and the other below k_acc / alpha (unless the donor would drop below min_blocks), each
// move adjusting the pair's counts by the expected selections of the moved blocks, so later pairs
// see it. Returns the number of blocks moved. Ratios in double, identical on every rank and on
// host and device; k_move in exact integer arithmetic (the product can exceed 64 bits).
SCCL_HOST_DEVICE inline int64_t exdynaRebalance(const ExDynaRebalanceRule& rule,
                                                const uint64_t* counts, uint64_t iteration,
                                                int64_t* blocks, int64_t* first_block,
                                                int64_t* ks) {
  const int n = rule.nranks;
  if (n == 1) return 0;
  uint64_t total = 0;
  for (int r = 0; r < n; ++r) {
    ks[cyclicPartition(r, iteration, n)] = int64_t(counts[r]);
    total += counts[r];
  }
  if (total == 0 || rule.count == 0) return 0;  // nothing selected: no load to balance
  const double k_acc = double(total) / double(n);
  const double alpha = rule.alpha, inv_alpha = 1.0 / alpha;
  const int64_t move = rule.move_blocks;
  const unsigned __int128 moved_elements = (unsigned __int128)(move)*rule.block_size;
  const int64_t k_move = int64_t(moved_elements * total / rule.count);
  int64_t moved = 0;
  for (size_t i = 0; i + 1 < size_t(n); ++i) {
    const double det = double(ks[i]) / k_acc;
    const double det2 = double(ks[i + 1]) / k_acc;
    int64_t shift = 0;  // > 0: partition i gives blocks to i + 1; < 0: it receives them
    if (det > alpha && det2 < inv_alpha) {
      if (blocks[i] - move < rule.min_blocks) continue;
      shift = move;
    } else if (det < inv_alpha && det2 > alpha) {
      if (blocks[i + 1] - move < rule.min_blocks) continue;
      shift = -move;
    } else {
      continue;
    }
    blocks[i] -= shift;
    blocks[i + 1] += shift;
    first_block[i + 1] -= shift;
    moved += move;
    const int64_t expected = shift > 0 ? k_move : -k_move;
    ks[i] -= expected;
    ks[i + 1] += expected;
  }
  return moved;
}

}  // namespace sccl
