// The NCCL transport (docs/transports/nccl.md): ranks are processes (or threads) with one GPU
// each; buffers may be device or host memory (host buffers are staged through device memory).
//
// Communicator: rank 0 creates an ncclUniqueId, the ranks exchange it through the bootstrap, and
// each calls ncclCommInitRankConfig on its current device (cudaSetDevice before scclCommInit*)
// with the non-blocking config. Every wait (initialisation, each operation) polls
// ncclCommGetAsyncError and the stream against the communicator's deadline; on timeout or abort
// the NCCL communicator is aborted (ncclCommAbort), so nothing hangs. NCCL's error code, its
// name and ncclGetLastError's text become the scclGetLastError message.
//
// Operations (on the transport's own stream, blocking as the transport contract requires):
//  - allGather: ncclAllGather; allGatherV: one ncclBroadcast per rank inside a group.
//  - allReduce: ncclAllGather into a workspace, then the rank-order reduction kernel
//    (cuda/kernels/rank_order_reduce.cu). NCCL's own ncclAllReduce is not used: its summation
//    order depends on the algorithm (ring or tree), the protocol, the channel count and the
//    chunking NCCL picks for the size and topology, so its bits differ from ((x_0 + x_1) + x_2)...
//    and can change with the message size or the machine; the transport contract asks for
//    rank order on every transport. Cost: n x the data received instead of 2 (n-1)/n. (The
//    stream-ordered maximum of bytes, allReduceMaxBytesOnStream, is NCCL's: exact in any order.)
//  - reduceScatter: block r of every rank to rank r by grouped ncclSend/ncclRecv into the
//    workspace, then the same rank-order reduction kernel over the n copies ((n-1)/n of the input
//    out per rank, as NCCL's own; its ncclReduceScatter is not used for the reason above).
//  - broadcast: ncclBroadcast. barrier: an all-gather of one byte.
//  - send/recv: ncclSend/ncclRecv, each waiting for its match (NCCL semantics: a send returns
//    once the peer has received); exchange(): a grouped send and receive with one peer, the
//    deadlock-free way for two ranks to swap data. NCCL has no tags: messages between a pair are
//    matched in order, whatever the tag.
//  - windows (one-sided): not supported (scclInvalidUsage), as NCCL has none in this API.
//  - one rank: allGather, allGatherV, allReduce, broadcast and barrier do not call NCCL. Each is
//    a copy (host memcpy, or one cudaMemcpyAsync on the transport's stream), allReduce the
//    rank-order reduction of the one input (the kernel on device memory, reduceInRankOrder on
//    host memory: NaN canonical as with more ranks); the stream-ordered pair likewise on the
//    caller's stream. Measured on an H200 (docs/results/fused_pass.md): NCCL's launch plus the
//    staging of small host buffers cost 30-100 us per collective for nothing to exchange.
#pragma once

#include <memory>

#include "transports/transport_registry.h"

namespace sccl {

scclResult_t createNcclTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out);

}  // namespace sccl
