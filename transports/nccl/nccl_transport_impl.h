// The NCCL transport's class, shared by its creation (nccl_comm_init.cc) and its operations
// (nccl_transport.cc). See nccl_transport.h for the design.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>

#include "cuda/workspace.h"
#include "transports/stream_collectives.h"
#include "transports/transport.h"

namespace sccl {

// An NCCL failure as scclResult_t with NCCL's text (and the communicator's last error).
scclResult_t ncclFailure(ncclResult_t result, ncclComm_t comm, const char* what);

class NcclTransport final : public Transport, public StreamCollectives {
 public:
  using Clock = std::chrono::steady_clock;

  NcclTransport(ncclComm_t comm, cudaStream_t stream, int rank, int nranks, int64_t timeout_ms);
  ~NcclTransport() override;

  const char* name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  TransportCapabilities capabilities() const override { return {true, false}; }

  scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) override;
  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override;
  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         ReduceOp op) override;
  scclResult_t reduceScatter(const void* send, void* recv, size_t recvcount, scclDataType_t dtype,
                             ReduceOp op) override;
  scclResult_t broadcast(void* buf, size_t bytes, int root) override;
  scclResult_t send(const void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t recv(void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t barrier() override;
  void abort() override;

  StreamCollectives* streamCollectives() override { return this; }
  scclResult_t broadcastOnStream(void* buf, size_t bytes, int root, void* stream) override;
  scclResult_t allGatherOnStream(const void* send, void* recv, size_t bytes_per_rank,
                                 void* stream) override;
  scclResult_t allReduceMaxBytesOnStream(const void* send, void* recv, size_t bytes,
                                         void* stream) override;
  scclResult_t allReduceOnStream(const void* send, void* recv, size_t count, scclDataType_t dtype,
                                 void* gathered, void* stream) override;

  // Grouped send to and receive from one peer (both complete before it returns).
  scclResult_t exchange(const void* send_buf, void* recv_buf, size_t bytes, int peer);

  // Non-blocking communicator: a call that returned ncclInProgress is still being enqueued, and
  // nothing else may go on its stream (or to the communicator) before it is. Polls
  // ncclCommGetAsyncError until the enqueue is done (or fails, or the deadline passes).
  scclResult_t awaitEnqueued(const char* what);

  // Polls ncclCommGetAsyncError and the stream until the work enqueued so far is complete, the
  // deadline passes (scclTimeout, communicator aborted) or NCCL reports an error.
  scclResult_t waitStream(const char* what);

 private:
  // Device memory for a host buffer (staged) or the buffer itself if it is device memory.
  scclResult_t deviceView(const void* host_or_device, size_t bytes, CudaWorkspace& staging,
                          bool copy_in, void** device, bool* staged);
  scclResult_t copyBack(void* host, const void* device, size_t bytes, bool staged);
  // One rank: a collective is this copy (host or device memory on either side), made without
  // NCCL and without staging, then waited for.
  scclResult_t copyLocal(void* dst, const void* src, size_t bytes, const char* what);
  // The wait of waitStream (until_stream_idle) and awaitEnqueued.
  scclResult_t poll(const char* what, bool until_stream_idle);
  scclResult_t failed(scclResult_t result);

  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_, nranks_;
  int64_t timeout_ms_;
  scclResult_t broken_ = scclSuccess;  // after a failure every call repeats it
  bool aborted_ = false;
  CudaWorkspace send_staging_, recv_staging_, gathered_;
};

}  // namespace sccl
