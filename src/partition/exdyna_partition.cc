// ExDyna (D. Yoon, S. Oh, "Preserving Near-Optimal Gradient Sparsification Cost for Scalable
// Distributed Deep Learning"): fine-grained block partitions whose boundaries follow the load.
//   Alg. 2  Cut [0, count) into n_b blocks of sz_blk elements (a multiple of block_align), the
//           remainder going to the last partition; partition p holds n_b / n blocks, one more for
//           each of the first n_b % n; blk_pos is the prefix sum.
//   Alg. 3  After each call, with the counts k_i in partition order and k_acc = k' / n, one pass
//           over adjacent pairs (i, i + 1): if k_i / k_acc > alpha and k_{i+1} / k_acc < 1 / alpha,
//           move rebalance_move_blocks blocks from i to i + 1 (and symmetrically), unless the
//           donor would drop below min_blk; then adjust k_i, k_{i+1} by the expected selections
//           of the moved blocks, int(move * sz_blk * k' / count), so later pairs see the move.
//   Assign  At iteration t rank r takes partition (t % n + r) % n, as MiCRO.
// The pass itself is kernels/shared/exdyna_rebalance.h (shared with the stream-ordered device
// call). The pass shrinks the largest per-rank count m_t, and with it the padded index all-gather
// (n * m_t indices instead of k'; f(t) = n * m_t / k' in the paper). Bytes on the wire:
// docs/algorithms/exdyna.md.
// Where we differ from the reference ExDynaReducer, on purpose:
//  - Small vectors: the reference gives sz_blk = 0 when count / n_b < 32 (every partition empty,
//    everything in the remainder). We shrink the block count instead (exdynaBlockLayout()), and
//    raise n_b to n when num_blocks < n so that every partition starts with a block.
//  - k_acc is k' / n exactly (the reference truncates it to an integer, which divides by zero
//    when k' < n); k' = 0 moves nothing. The ratios are compared in double, identically on every
//    rank; k_move is computed in exact integer arithmetic.
//  - min_blk = max(1, floor(n_b * min_blocks_factor / n)): the reference's num_blk / (4n) is a
//    float that reaches 0 past 256 ranks. n = 1 works (the reference fails with a NameError).
#include "partition/exdyna_partition.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "partition/search_space_factories.h"

namespace sccl {

ExDynaBlockLayout exdynaBlockLayout(size_t count, int nranks, int num_blocks, int block_align) {
  const size_t n = static_cast<size_t>(std::max(nranks, 1));
  const size_t align = static_cast<size_t>(std::max(block_align, 1));
  const size_t blocks = std::max(static_cast<size_t>(std::max(num_blocks, 1)), n);
  ExDynaBlockLayout layout;
  const size_t per_block = count / blocks;
  layout.block_size = per_block - per_block % align;
  if (layout.block_size > 0) {
    layout.block_count = static_cast<int64_t>(blocks);  // Alg. 2 as the reference
  } else if (count / align >= n) {
    // Too few elements for n_b aligned blocks: fewer blocks, still aligned, at least n of them.
    layout.block_size = align;
    layout.block_count = static_cast<int64_t>(count / align);
  } else {
    // Fewer than n aligned blocks: one-element blocks (count < n * block_align, so few of them).
    layout.block_size = 1;
    layout.block_count = static_cast<int64_t>(count);
  }
  layout.remainder = count - layout.block_size * static_cast<size_t>(layout.block_count);
  return layout;
}

scclResult_t ExDynaSearchSpace::validateParams(const SearchSpaceParams& p) {
  SCCL_REQUIRE_ARG(p.nranks >= 1, "search space 'exdyna': nranks must be >= 1 (got %d)", p.nranks);
  // min_blocks_factor's upper end 1 is ExDyna's: above it no partition could ever give a block
  // away (min_blk > n_b / n).
  return checkKnobs<SearchKnobs>(p, "search space 'exdyna': ");
}

ExDynaSearchSpace::ExDynaSearchSpace(const SearchSpaceParams& params) : params_(params) {
  reset();
}

void ExDynaSearchSpace::reset() {
  const size_t n = static_cast<size_t>(params_.nranks);
  layout_ =
      exdynaBlockLayout(params_.count, params_.nranks, params_.num_blocks, params_.block_align);
  const double min_blocks = std::floor(static_cast<double>(layout_.block_count) *
                                       params_.min_blocks_factor / static_cast<double>(n));
  min_blocks_ = std::max<int64_t>(1, static_cast<int64_t>(min_blocks));
  rule_.nranks = params_.nranks;
  rule_.alpha = params_.rebalance_alpha;
  rule_.move_blocks = params_.rebalance_move_blocks;
  rule_.min_blocks = min_blocks_;
  rule_.block_size = layout_.block_size;
  rule_.remainder = layout_.remainder;
  rule_.count = params_.count;
  const int64_t quotient = layout_.block_count / static_cast<int64_t>(n);
  const size_t extra = static_cast<size_t>(layout_.block_count % static_cast<int64_t>(n));
  blocks_.assign(n, quotient);
  first_block_.assign(n, 0);
  for (size_t p = 0; p < n; ++p) {
    if (p < extra) ++blocks_[p];
    if (p > 0) first_block_[p] = first_block_[p - 1] + blocks_[p - 1];
  }
  ks_.assign(n, 0);
  last_moved_ = 0;
}

IndexRange ExDynaSearchSpace::partition(size_t p) const {
  if (p >= blocks_.size()) return {};
  uint64_t begin = 0, end = 0;
  exdynaPartitionBounds(rule_, blocks_.data(), first_block_.data(), p, &begin, &end);
  return {begin, end};
}

IndexRange ExDynaSearchSpace::rangeFor(int rank, uint64_t iteration) const {
  if (rank < 0 || rank >= params_.nranks) return {};
  return partition(cyclicPartition(rank, iteration, params_.nranks));
}

void ExDynaSearchSpace::observeCounts(const uint64_t* counts, uint64_t iteration) {
  last_moved_ = 0;
  if (counts == nullptr) return;
  last_moved_ =
      exdynaRebalance(rule_, counts, iteration, blocks_.data(), first_block_.data(), ks_.data());
  if (last_moved_ != 0) {
    SCCL_TRACE(LogSubsys::Coll, "exdyna: iteration %llu, %lld blocks moved",
               static_cast<unsigned long long>(iteration), static_cast<long long>(last_moved_));
  }
}

// The blocks of each partition in partition order (the first blocks follow from them) and the
// last rebalancing's move count (statistics).
void ExDynaSearchSpace::saveState(StateWriter& shared) const {
  shared.u64(blocks_.size());
  for (int64_t blocks : blocks_) shared.i64(blocks);
  shared.i64(last_moved_);
}

scclResult_t ExDynaSearchSpace::adoptBlocks(const int64_t* blocks, size_t partitions,
                                            const char* source) {
  SCCL_REQUIRE_ARG(partitions == blocks_.size(), "%s: %zu exdyna partitions, this space has %zu",
                   source, partitions, blocks_.size());
  int64_t total = 0;
  for (size_t p = 0; p < partitions; ++p) {
    SCCL_REQUIRE_ARG(blocks[p] >= 0 && blocks[p] <= layout_.block_count - total,
                     "%s: exdyna partitions claim more than the %lld blocks", source,
                     static_cast<long long>(layout_.block_count));
    total += blocks[p];
  }
  SCCL_REQUIRE_ARG(total == layout_.block_count, "%s: exdyna partitions hold %lld blocks, not %lld",
                   source, static_cast<long long>(total),
                   static_cast<long long>(layout_.block_count));
  std::copy_n(blocks, partitions, blocks_.begin());
  for (size_t p = 0; p < blocks_.size(); ++p)
    first_block_[p] = p == 0 ? 0 : first_block_[p - 1] + blocks_[p - 1];
  return scclSuccess;
}

scclResult_t ExDynaSearchSpace::loadState(StateReader& shared) {
  uint64_t partitions = 0;
  SCCL_CHECK(shared.u64("exdyna partition count", &partitions));
  SCCL_REQUIRE_ARG(partitions == blocks_.size(),
                   "sparsifier checkpoint: %llu exdyna partitions, this sparsifier has %zu",
                   static_cast<unsigned long long>(partitions), blocks_.size());
  std::vector<int64_t> blocks(blocks_.size());
  for (int64_t& b : blocks) SCCL_CHECK(shared.i64("exdyna blocks of a partition", &b));
  int64_t moved = 0;
  SCCL_CHECK(shared.i64("exdyna blocks moved", &moved));
  SCCL_REQUIRE_ARG(moved >= 0 && moved <= layout_.block_count,
                   "sparsifier checkpoint: exdyna blocks moved %lld",
                   static_cast<long long>(moved));
  SCCL_CHECK(adoptBlocks(blocks.data(), blocks.size(), "sparsifier checkpoint"));
  last_moved_ = moved;
  return scclSuccess;
}

scclResult_t createExDynaSearchSpace(const SearchSpaceParams& params,
                                     std::unique_ptr<SearchSpace>* out) {
  SCCL_CHECK(ExDynaSearchSpace::validateParams(params));
  *out = std::make_unique<ExDynaSearchSpace>(params);
  return scclSuccess;
}

}  // namespace sccl
