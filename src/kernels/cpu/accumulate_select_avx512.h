// The AVX-512 inner loop of the fused pass for float32 accumulators (accumulate_select.cc): the
// gradient is accumulated, counted and compared with the floor in registers, so the accumulator
// is written once (with streaming stores when aligned) and never read back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl::cpu {

// Accumulates the whole 64-element groups of [begin, end) (acc = residual + grad, as
// accumulate() on AVX-512: the same sums and canonical NaN) and appends every element whose
// magnitude bits are >= floor_bits to idx/val (ascending; val: the float32 bits); idx and val
// need room for end - begin entries (floor_bits 0xffffffff: nothing qualifies, they may be null).
// Adds the groups' non-finite count to *nonfinite, sets *emitted, and returns where it stopped (the
// caller finishes the tail of fewer than 64). Streaming stores need acc + begin 64-byte aligned and
// a fence (sfence) by the calling thread.
// The streaming loop also zeroes out[begin, end) when out is not null (float32, out + begin
// 64-byte aligned), each group after its gradient was read (out may be the gradient).
using FusedGroupsFn = size_t (*)(float* acc, const float* residual, const void* grad, size_t begin,
                                 size_t end, uint32_t floor_bits, int64_t* idx, uint32_t* val,
                                 uint64_t* nonfinite, size_t* emitted, float* out);

// The loop for a gradient type (float32, float16, bfloat16) into a float32 accumulator; null for
// other types.
FusedGroupsFn fusedGroupsAvx512(scclDataType_t grad_dtype, bool has_residual, bool streaming);

}  // namespace sccl::cpu
