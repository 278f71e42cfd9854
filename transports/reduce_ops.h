// The reduction every transport applies, in one place so that all transports produce bitwise
// the same result: out[i] = ((in[0][i] + in[1][i]) + in[2][i]) + ... in rank order (or max, min).
// float16 and bfloat16 are combined in float32 and rounded once at the end; integer sums wrap
// (computed in unsigned arithmetic, so there is no undefined behaviour). Max and min propagate NaN;
// a floating result that is NaN is the canonical NaN (kernels/shared/canonical_nan.h).
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"
#include "transports/transport.h"

namespace sccl {

// inputs[r] points at rank r's `count` elements; out may alias inputs[0] (in-place reduction by
// the owner of the first input) but no other input.
void reduceInRankOrder(const void* const* inputs, int ninputs, void* out, size_t count,
                       scclDataType_t dtype, ReduceOp op);

}  // namespace sccl
