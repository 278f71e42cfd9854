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
  // recv = the element-wise sum of every rank's send, in rank order (bitwise the host
  // transports'); send may equal recv.
  virtual scclResult_t allReduceSum(SparseCall& call, const void* send, void* recv, size_t count,
                                    scclDataType_t dtype) = 0;
  // recv = the byte-wise maximum of every rank's send (uint8: exact in any order); send may
  // equal recv.
  virtual scclResult_t allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                         size_t bytes) = 0;
  // Whether the resident gather exchanges its header and bins in two collectives (the bins
  // all-reduced, then the headers all-gathered: the host reduction's bytes) rather than one
  // all-gather of both, at this many ranks (resident_gather.cc, "Bytes").
  virtual bool twoStep(int nranks) const = 0;
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
  scclResult_t allReduceSum(SparseCall& call, const void* send, void* recv, size_t count,
                            scclDataType_t dtype) override;
  scclResult_t allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                 size_t bytes) override;
  scclResult_t broadcast(SparseCall& call, void* buf, size_t bytes, int root) override;
  // NCCL's all-reduce is an all-gather and a rank-order kernel: one all-gather of both moves the
  // same bytes in one collective.
  bool twoStep(int) const override { return false; }

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
  scclResult_t allReduceSum(SparseCall& call, const void* send, void* recv, size_t count,
                            scclDataType_t dtype) override;
  scclResult_t allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                 size_t bytes) override;
  // The root reads its bytes back and waits; the others only receive.
  scclResult_t broadcast(SparseCall& call, void* buf, size_t bytes, int root) override;
  // From kTwoStepRanks ranks up: a reduce-scatter all-reduce of the bins costs about 2 x 4104
  // bytes where the all-gather of every rank's costs (n-1) 4136, against one collective (and
  // one wait) more.
  bool twoStep(int nranks) const override { return nranks >= kTwoStepRanks; }
  static constexpr int kTwoStepRanks = 8;

 private:
  DeviceStaging& staging_;
};

// The communicator's own transport on host memory, in place (host buffers on a call written
// against the kernel interface: sketch_call.cc with algorithms/host_staging.h).
class HostExchange final : public StreamExchange {
 public:
  scclResult_t allGather(SparseCall& call, const void* send, void* recv,
                         size_t bytes_per_rank) override;
  scclResult_t allReduceSum(SparseCall& call, const void* send, void* recv, size_t count,
                            scclDataType_t dtype) override;
  scclResult_t allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                 size_t bytes) override;
  scclResult_t broadcast(SparseCall& call, void* buf, size_t bytes, int root) override;
  bool twoStep(int nranks) const override { return nranks >= StagedExchange::kTwoStepRanks; }
};

}  // namespace sccl
