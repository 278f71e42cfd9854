// Collectives enqueued on the caller's CUDA stream, for the device-resident calls
// (algorithms/stream_exchange.h: the resident gather and sync_free calls), which nothing on the
// host waits for and which a CUDA graph can therefore capture. A transport that carries device memory and can order
// its work on a given stream offers them (Transport::streamCollectives(); NCCL does); the
// blocking operations of transport.h stay the contract of every other call.
//
// Contract: buffers are device memory on the communicator's GPU; each function returns once its
// work is enqueued on `stream` (a cudaStream_t), which may be capturing; results are those of the
// blocking operations (allReduce: element-wise in rank order, bitwise the other transports').
// Errors found while enqueuing are returned; errors while the work runs are the transport's
// asynchronous errors (scclCommGetAsyncError).
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class StreamCollectives {
 public:
  virtual ~StreamCollectives() = default;

  // recv[r * bytes_per_rank, (r+1) * bytes_per_rank) = send of rank r.
  virtual scclResult_t allGatherOnStream(const void* send, void* recv, size_t bytes_per_rank,
                                         void* stream) = 0;

  // buf (bytes) of rank `root` into buf of every rank.
  virtual scclResult_t broadcastOnStream(void* buf, size_t bytes, int root, void* stream) = 0;

  // recv = sum over ranks of send, `count` elements, in rank order. `gathered` is the caller's
  // scratch of nranks * count elements (device memory), so that nothing is allocated while a
  // graph is being captured.
  virtual scclResult_t allReduceOnStream(const void* send, void* recv, size_t count,
                                         scclDataType_t dtype, void* gathered, void* stream) = 0;

  // recv = the byte-wise maximum over ranks of send (uint8, `bytes` elements): exact in any
  // order, so the transport's own reduction serves (S2's block bitmaps).
  virtual scclResult_t allReduceMaxBytesOnStream(const void* send, void* recv, size_t bytes,
                                                 void* stream) = 0;
};

}  // namespace sccl
