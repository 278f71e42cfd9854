// The S2 reduction's state (sketch_reduction.cc prepares it): the block and table shape, the
// block selection, the residual rule and the host buffers of a call on host buffers, read by the
// S2 call (sketch_call.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/host_staging.h"
#include "kernels/shared/count_sketch.h"

namespace sccl {

struct SketchState final : ReductionState {
  SketchShape shape;
  std::vector<uint64_t> keys;
  uint64_t max_blocks = 0;      // K of "topk"
  bool select_nonzero = false;  // "nonzero" selection
  bool feedback_decode_error = false;
  std::vector<uint8_t> global;  // the union of the last completed host call's marked blocks
  // Host buffers as the kernels' memory of the call on host buffers (sketch_call.cc): norms,
  // bitmaps, headers, plan, table and the decoded sum, kept between calls.
  HostStaging host_staging;
};

}  // namespace sccl
