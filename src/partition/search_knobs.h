// The search spaces' knobs (ExDyna's blocks and rebalancing), each declared once
// (core/knob_table.h says what a row becomes):
//   X(type, key, scclSparseConfig_t field, lowest, highest, bounds, help)
#pragma once

#include <vector>

#include "core/knob_table.h"

#define SCCL_SEARCH_KNOBS(X)                                                            \
  X(int, num_blocks, numBlocks, 1, INT_MAX, Closed,                                     \
    "ExDyna's blocks n_b (raised to the rank count when fewer)")                        \
  X(int, block_align, blockAlign, 1, INT_MAX, Closed,                                   \
    "ExDyna's block size is a multiple of this many entries")                           \
  X(double, rebalance_alpha, rebalanceAlpha, 1, DBL_MAX, OpenBelow,                     \
    "ExDyna rebalances when the largest partition's load exceeds alpha times the mean") \
  X(int, rebalance_move_blocks, rebalanceMoveBlocks, 1, INT_MAX, Closed,                \
    "blocks ExDyna moves per rebalancing step")                                         \
  X(double, min_blocks_factor, minBlocksFactor, 0, 1, Closed,                           \
    "ExDyna's minimum blocks per partition: num_blocks * factor / ranks")

namespace sccl {

SCCL_DECLARE_KNOB_AXIS(SearchKnobs, SCCL_SEARCH_KNOBS)

}  // namespace sccl
