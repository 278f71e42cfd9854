// The collectives of a device-resident call (algorithms/resident_gather.cc), on buffers in the
// kernels' memory and ordered on the call's stream. Two ways to run them:
//  - OnStreamExchange: the transport's collectives on the stream (NCCL: enqueued, nothing waits);
//  - StagedExchange: a host transport (local, mpi, ucx), each collective staged through the
//    staging's host buffers: its send bytes read back, one wait, the host operation, its receive
//    bytes copied up. Exactly the operation's wire bytes cross, never the vector.
// Both count the wire bytes into the call as the host reductions do.
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "kernels/device_staging.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

class StreamCollectives;

class StreamExchange {
 public:
  virtual ~StreamExchange() = default;
  // recv[r * bytes_per_rank, ...) = send of rank r.
  virtual scclResult_t allGather(SparseCall& call, const void* send, void* recv,
                                 size_t bytes_per_rank) = 0;
  // In place, element-wise sum in rank order (bitwise the host transports').
  virtual scclResult_t allReduceSum(SparseCall& call, void* values, size_t count,
                                    scclDataType_t dtype) = 0;
  // buf (bytes) of rank `root` into buf of every rank.
  virtual scclResult_t broadcast(SparseCall& call, void* buf, size_t bytes, int root) = 0;
};

// The transport's collectives on the stream (collectives null: not available).
class OnStreamExchange final : public StreamExchange {
 public:
  OnStreamExchange(StreamCollectives& collectives, DeviceStaging& staging, void* stream)
      : collectives_(collectives), staging_(staging), stream_(stream) {}
  scclResult_t allGather(SparseCall& call, const void* send, void* recv,
                         size_t bytes_per_rank) override;
  scclResult_t allReduceSum(SparseCall& call, void* values, size_t count,
                            scclDataType_t dtype) override;
  scclResult_t broadcast(SparseCall& call, void* buf, size_t bytes, int root) override;

 private:
  StreamCollectives& collectives_;
  DeviceStaging& staging_;
  void* stream_;
};

// The communicator's host transport, staged through the staging's host buffers.
class StagedExchange final : public StreamExchange {
 public:
  explicit StagedExchange(DeviceStaging& staging) : staging_(staging) {}
  scclResult_t allGather(SparseCall& call, const void* send, void* recv,
                         size_t bytes_per_rank) override;
  scclResult_t allReduceSum(SparseCall& call, void* values, size_t count,
                            scclDataType_t dtype) override;
  // The root reads its bytes back and waits; the others only receive.
  scclResult_t broadcast(SparseCall& call, void* buf, size_t bytes, int root) override;

 private:
  DeviceStaging& staging_;
};

}  // namespace sccl
