// scclAvg: the rank-order sum divided by the number of ranks, in the buffer's own type.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// buffer[i] /= nranks for floating types (float16/bfloat16 divide in float32 and round once);
// scclInternalError for other types (callers reject integer averages before this point).
scclResult_t divideByRanks(void* buffer, size_t count, scclDataType_t dtype, int nranks);

}  // namespace sccl
