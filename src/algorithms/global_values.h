// The value steps every call on the kernels ends with once its global list is built (the resident
// gather, CLT-k and union calls): the accumulator's values at the list gathered and zeroed there
// (the accumulator becomes the residual, so what is sent leaves it), all-reduced in rank order
// through the exchange, divided by the ranks for scclAvg, and written to recvbuf (zero elsewhere).
#pragma once

#include <cstdint>

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"

namespace sccl {

// global: the k entries of the list in the kernels' memory. fault: the call's index-check word
// (the kernels' memory), which leaves recvbuf untouched when a peer's index failed; null for a
// list whose entries were checked before the host went on (the union call's plan read back).
scclResult_t reduceGlobalValues(SparseCall& call, StreamExchange& exchange,
                                const StagedVectors& vectors, const int64_t* global, uint64_t k,
                                const uint32_t* fault);

}  // namespace sccl
