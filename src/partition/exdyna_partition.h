// ExDyna's block partitions (exdyna_partition.cc), declared here so that tests and statistics can
// see the block layout behind the SearchSpace interface.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/shared/exdyna_rebalance.h"
#include "partition/search_space.h"

namespace sccl {

// How [0, count) is cut into blocks: block_count blocks of block_size elements, then `remainder`
// elements that belong to the last partition.
struct ExDynaBlockLayout {
  size_t block_size = 1;
  int64_t block_count = 0;
  size_t remainder = 0;
};

// The layout rule (see exdyna_partition.cc and docs/algorithms/exdyna.md):
//  n_b = max(num_blocks, nranks); size = count / n_b rounded down to a multiple of block_align.
//  size > 0:                      n_b blocks of that size (the reference Alg. 2).
//  else count / block_align >= n: count / block_align blocks of block_align elements.
//  else:                          count blocks of one element.
ExDynaBlockLayout exdynaBlockLayout(size_t count, int nranks, int num_blocks, int block_align);

class ExDynaSearchSpace final : public SearchSpace {
 public:
  // params must have passed validateParams().
  explicit ExDynaSearchSpace(const SearchSpaceParams& params);

  static scclResult_t validateParams(const SearchSpaceParams& params);

  const char* name() const override { return "exdyna"; }
  bool exclusive() const override { return true; }
  IndexRange rangeFor(int rank, uint64_t iteration) const override;
  void observeCounts(const uint64_t* counts, uint64_t iteration) override;
  size_t partitionCount() const override { return blocks_.size(); }
  IndexRange partition(size_t p) const override;
  void reset() override;
  void saveState(StateWriter& shared) const override;
  scclResult_t loadState(StateReader& shared) override;

  const ExDynaBlockLayout& layout() const { return layout_; }
  int64_t minBlocks() const { return min_blocks_; }
  int64_t blocksIn(size_t p) const { return blocks_[p]; }
  // The blocks of each partition (partition order) as a copy kept elsewhere moved them (the
  // device-resident sync_free call's words, for a checkpoint): checked as loadState checks a
  // blob's (at least 0 each, all of the vector's blocks together); nothing changes on an error.
  // source names them in an error message.
  scclResult_t adoptBlocks(const int64_t* blocks, size_t partitions, const char* source);
  int64_t firstBlock(size_t p) const { return first_block_[p]; }
  // Blocks moved across partition boundaries by the last observeCounts() (0: balanced).
  int64_t lastBlocksMoved() const { return last_moved_; }
  // The pass's constants (kernels/shared/exdyna_rebalance.h), for the device copy of the
  // partitions.
  const ExDynaRebalanceRule& rebalanceRule() const { return rule_; }

 private:
  SearchSpaceParams params_;
  ExDynaBlockLayout layout_;
  ExDynaRebalanceRule rule_;
  int64_t min_blocks_ = 1;
  std::vector<int64_t> blocks_;       // blk_part: blocks per partition
  std::vector<int64_t> first_block_;  // blk_pos: index of each partition's first block
  std::vector<int64_t> ks_;           // scratch: counts in partition order
  int64_t last_moved_ = 0;
};

}  // namespace sccl
