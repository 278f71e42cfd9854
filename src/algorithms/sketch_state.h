// The S2 reduction's state (sketch_reduction.cc prepares it): the block and table shape, the
// block selection and the residual rule, read by the S2 call (sketch_call.cc). A call on host
// buffers keeps its arrays in the reductions' host staging (ReductionMemory::host_staging).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "kernels/shared/count_sketch.h"

namespace sccl {

struct SketchState final : ReductionState {
  SketchShape shape;
  std::vector<uint64_t> keys;
  uint64_t max_blocks = 0;      // K of "topk"
  bool select_nonzero = false;  // "nonzero" selection
  bool feedback_decode_error = false;
  std::vector<uint8_t> global;  // the union of the last completed host call's marked blocks
};

}  // namespace sccl
