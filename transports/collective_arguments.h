// Argument checks shared by every transport's collectives, so that a bad argument gets the same
// code (scclInvalidArgument) and the same message whichever engine runs the call. Each check has
// no side effects: it runs before anything is posted, so the transport stays usable.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"
#include "transports/transport.h"

namespace sccl {

// allGather: bytes_per_rank x nranks must fit size_t; buffers may be NULL only for 0 bytes.
scclResult_t checkAllGatherArguments(const void* send, const void* recv, size_t bytes_per_rank,
                                     int nranks);

// allGatherV: the size arrays exist, this rank's entry equals send_bytes, no offset + length
// overflows, and buffers are NULL only where nothing moves. *any_bytes tells whether any rank
// contributes a byte (a call with none returns at once).
scclResult_t checkAllGatherVArguments(const void* send, size_t send_bytes, const void* recv,
                                      const size_t* recv_bytes, const size_t* recv_offsets,
                                      int rank, int nranks, const char* operation, bool* any_bytes);

// allReduce: a known type and op, count x element size fits size_t (*total_bytes), buffers NULL
// only for count 0.
scclResult_t checkAllReduceArguments(const void* send, const void* recv, size_t count,
                                     scclDataType_t dtype, ReduceOp op, size_t* total_bytes);

// reduceScatter: allReduce's checks on the nranks x recvcount elements of send (*block_bytes:
// recvcount x element size).
scclResult_t checkReduceScatterArguments(const void* send, const void* recv, size_t recvcount,
                                         scclDataType_t dtype, ReduceOp op, int nranks,
                                         size_t* block_bytes);

// broadcast: root in range, buffer NULL only for 0 bytes.
scclResult_t checkBroadcastArguments(const void* buf, size_t bytes, int root, int nranks);

}  // namespace sccl
