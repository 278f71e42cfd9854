// The S2 reduction's state (sketch_reduction.cc prepares it): the block and table shape, the
// block selection and the host buffers of a call, shared by the host reduction and the
// device-resident call (resident_sketch.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/aligned_buffer.h"
#include "kernels/shared/count_sketch.h"

namespace sccl {

struct SketchState final : ReductionState {
  SketchShape shape;
  std::vector<uint64_t> keys;
  uint64_t max_blocks = 0;      // K of "topk"
  bool select_nonzero = false;  // "nonzero" selection
  bool feedback_decode_error = false;
  std::vector<uint8_t> local;   // this rank's marked blocks
  std::vector<uint8_t> global;  // the union (max all-reduce)
  std::vector<double> norms;    // every block's squared norm, then the cut-off
  AlignedBuffer table;
  AlignedBuffer decoded;  // "decode_error" only: the decoded sum / n in the accumulator type
};

}  // namespace sccl
