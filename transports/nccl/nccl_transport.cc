// The NCCL transport's operations; see nccl_transport.h for the design and the reasons.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/dtype.h"
#include "core/error.h"
#include "core/memory_space.h"
#include "cuda/cuda_status.h"
#include "cuda/dispatch.h"
#include "transports/collective_arguments.h"
#include "transports/reduce_ops.h"
#include "transports/nccl/nccl_transport_impl.h"

namespace sccl {
namespace {

// NCCL returns ncclInProgress from a non-blocking call that is still being set up; poll.
#define SCCL_NCCL_ENQUEUE(call, what)                                            \
  do {                                                                           \
    ncclResult_t sccl_nccl_result_ = (call);                                     \
    if (sccl_nccl_result_ != ncclSuccess && sccl_nccl_result_ != ncclInProgress) \
      return failed(ncclFailure(sccl_nccl_result_, comm_, what));                \
  } while (0)

// Inside ncclGroupStart/End: an error must close the group (NCCL's group depth is per thread;
// left open, every later call on this thread would only be queued) and break the transport.
#define SCCL_NCCL_ENQUEUE_IN_GROUP(call, what)                                     \
  do {                                                                             \
    ncclResult_t sccl_nccl_result_ = (call);                                       \
    if (sccl_nccl_result_ != ncclSuccess && sccl_nccl_result_ != ncclInProgress) { \
      (void)ncclGroupEnd();                                                        \
      scclResult_t sccl_result_ = ncclFailure(sccl_nccl_result_, comm_, what);     \
      if (broken_ == scclSuccess) broken_ = sccl_result_;                          \
      return sccl_result_;                                                         \
    }                                                                              \
  } while (0)

}  // namespace

NcclTransport::NcclTransport(ncclComm_t comm, cudaStream_t stream, int rank, int nranks,
                             int64_t timeout_ms)
    : comm_(comm), stream_(stream), rank_(rank), nranks_(nranks), timeout_ms_(timeout_ms) {}

NcclTransport::~NcclTransport() {
  // A healthy communicator is finalised (flushes its work); a broken one is only aborted, which
  // never blocks.
  if (!aborted_ && broken_ == scclSuccess) {
    ncclResult_t result = ncclCommFinalize(comm_);
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    ncclResult_t async = ncclInProgress;
    while (result == ncclSuccess || result == ncclInProgress) {
      result = ncclCommGetAsyncError(comm_, &async);
      if (result != ncclSuccess || async != ncclInProgress || Clock::now() > deadline) break;
      std::this_thread::yield();
    }
    if (result == ncclSuccess && async == ncclSuccess) {
      (void)ncclCommDestroy(comm_);
    } else {
      (void)ncclCommAbort(comm_);
    }
  } else if (!aborted_) {
    (void)ncclCommAbort(comm_);
  }
  (void)cudaStreamDestroy(stream_);
}

scclResult_t NcclTransport::failed(scclResult_t result) {
  if (result != scclSuccess && result != scclInvalidArgument && broken_ == scclSuccess)
    broken_ = result;
  return result;
}

void NcclTransport::abort() {
  if (aborted_) return;
  aborted_ = true;
  broken_ = scclRemoteError;
  (void)ncclCommAbort(comm_);
}

scclResult_t NcclTransport::waitStream(const char* what) {
  return poll(what, true);
}

scclResult_t NcclTransport::awaitEnqueued(const char* what) {
  return poll(what, false);
}

scclResult_t NcclTransport::poll(const char* what, bool until_stream_idle) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (true) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t result = ncclCommGetAsyncError(comm_, &async);
    if (result == ncclSuccess && async != ncclSuccess && async != ncclInProgress) result = async;
    if (result != ncclSuccess) {
      scclResult_t failure = ncclFailure(result, comm_, what);
      abort();
      broken_ = failure;
      return failure;
    }
    // While NCCL still enqueues (ncclInProgress) the stream may look idle: its work is not on it.
    if (async != ncclInProgress) {
      if (!until_stream_idle) return scclSuccess;
      const cudaError_t status = cudaStreamQuery(stream_);
      if (status == cudaSuccess) return scclSuccess;
      if (status != cudaErrorNotReady) return failed(cudaFailure(status, what));
    }
    if (Clock::now() > deadline) {
      abort();
      broken_ = scclTimeout;
      return fail(scclTimeout, "nccl transport: %s did not %s within %lld ms on rank %d", what,
                  until_stream_idle ? "complete" : "finish enqueuing",
                  static_cast<long long>(timeout_ms_), rank_);
    }
    std::this_thread::yield();
  }
}

scclResult_t NcclTransport::deviceView(const void* host_or_device, size_t bytes,
                                       CudaWorkspace& staging, bool copy_in, void** device,
                                       bool* staged) {
  *staged = host_or_device != nullptr && memorySpaceOf(host_or_device) == MemorySpace::Host;
  if (!*staged) {
    *device = const_cast<void*>(host_or_device);
    return scclSuccess;
  }
  SCCL_CHECK(failed(staging.reserve(bytes, device)));
  if (copy_in && bytes > 0) {
    SCCL_CUDA_CHECK(
        cudaMemcpyAsync(*device, host_or_device, bytes, cudaMemcpyHostToDevice, stream_),
        "nccl transport: staging a host buffer");
  }
  return scclSuccess;
}

scclResult_t NcclTransport::copyBack(void* host, const void* device, size_t bytes, bool staged) {
  if (!staged || bytes == 0) return scclSuccess;
  SCCL_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_),
                  "nccl transport: copying a result to host memory");
  return waitStream("copy to host");
}

scclResult_t NcclTransport::copyLocal(void* dst, const void* src, size_t bytes, const char* what) {
  if (dst == src || bytes == 0) return scclSuccess;
  if (memorySpaceOf(dst) == MemorySpace::Host && memorySpaceOf(src) == MemorySpace::Host) {
    std::memcpy(dst, src, bytes);
    return scclSuccess;
  }
  SCCL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_),
                  "nccl transport: one-rank copy");
  return waitStream(what);
}

scclResult_t NcclTransport::allGather(const void* send, void* recv, size_t bytes_per_rank) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_CHECK(checkAllGatherArguments(send, recv, bytes_per_rank, nranks_));
  if (nranks_ == 1) return copyLocal(recv, send, bytes_per_rank, "allGather");
  const size_t total = bytes_per_rank * size_t(nranks_);
  void* d_recv = nullptr;
  bool recv_staged = false;
  SCCL_CHECK(deviceView(recv, total, recv_staging_, false, &d_recv, &recv_staged));
  const void* d_send = nullptr;
  bool send_staged = false;
  if (send == static_cast<const char*>(recv) + size_t(rank_) * bytes_per_rank) {
    // In place: the own block is already in recv (staged: copy just that block up).
    d_send = static_cast<char*>(d_recv) + size_t(rank_) * bytes_per_rank;
    if (recv_staged && bytes_per_rank > 0)
      SCCL_CUDA_CHECK(cudaMemcpyAsync(const_cast<void*>(d_send), send, bytes_per_rank,
                                      cudaMemcpyHostToDevice, stream_),
                      "nccl transport: staging");
  } else {
    void* staged_send = nullptr;
    SCCL_CHECK(deviceView(send, bytes_per_rank, send_staging_, true, &staged_send, &send_staged));
    d_send = staged_send;
  }
  SCCL_NCCL_ENQUEUE(ncclAllGather(d_send, d_recv, bytes_per_rank, ncclUint8, comm_, stream_),
                    "ncclAllGather");
  SCCL_CHECK(waitStream("allGather"));
  return copyBack(recv, d_recv, total, recv_staged);
}

scclResult_t NcclTransport::allGatherV(const void* send, size_t send_bytes, void* recv,
                                       const size_t* recv_bytes, const size_t* recv_offsets) {
  if (broken_ != scclSuccess) return broken_;
  bool any_bytes = false;
  SCCL_CHECK(checkAllGatherVArguments(send, send_bytes, recv, recv_bytes, recv_offsets, rank_,
                                      nranks_, "allGatherV", &any_bytes));
  if (!any_bytes) return scclSuccess;
  if (nranks_ == 1)
    return copyLocal(static_cast<char*>(recv) + recv_offsets[0], send, send_bytes, "allGatherV");
  size_t total = 0;  // the checks above ruled out an overflowing offset + length
  for (int r = 0; r < nranks_; ++r) total = std::max(total, recv_offsets[r] + recv_bytes[r]);
  void* d_recv = nullptr;
  bool recv_staged = false;
  SCCL_CHECK(deviceView(recv, total, recv_staging_, false, &d_recv, &recv_staged));
  void* d_send = nullptr;
  bool send_staged = false;
  SCCL_CHECK(deviceView(send, send_bytes, send_staging_, true, &d_send, &send_staged));
  SCCL_NCCL_ENQUEUE(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < nranks_; ++r) {
    SCCL_NCCL_ENQUEUE_IN_GROUP(ncclBroadcast(d_send, static_cast<char*>(d_recv) + recv_offsets[r],
                                             recv_bytes[r], ncclUint8, r, comm_, stream_),
                               "ncclBroadcast (allGatherV)");
  }
  SCCL_NCCL_ENQUEUE(ncclGroupEnd(), "ncclGroupEnd");
  SCCL_CHECK(waitStream("allGatherV"));
  return copyBack(recv, d_recv, total, recv_staged);
}

scclResult_t NcclTransport::allReduce(const void* send, void* recv, size_t count,
                                      scclDataType_t dtype, ReduceOp op) {
  if (broken_ != scclSuccess) return broken_;
  size_t bytes = 0;
  SCCL_CHECK(checkAllReduceArguments(send, recv, count, dtype, op, &bytes));
  if (nranks_ == 1 && memorySpaceOf(send) == MemorySpace::Host &&
      memorySpaceOf(recv) == MemorySpace::Host) {
    // Both in host memory: the host's rank-order reduction of one input (it canonicalises NaN,
    // as the kernel does).
    const void* inputs[1] = {send};
    reduceInRankOrder(inputs, 1, recv, count, dtype, op);
    return scclSuccess;
  }
  void* d_send = nullptr;
  bool send_staged = false;
  SCCL_CHECK(deviceView(send, bytes, send_staging_, true, &d_send, &send_staged));
  // One rank: the reduction reads the input itself (nothing to gather).
  void* d_gathered = d_send;
  if (nranks_ > 1) {
    SCCL_CHECK(failed(gathered_.reserve(bytes * size_t(nranks_), &d_gathered)));
    SCCL_NCCL_ENQUEUE(ncclAllGather(d_send, d_gathered, bytes, ncclUint8, comm_, stream_),
                      "ncclAllGather (allReduce)");
    SCCL_CHECK(awaitEnqueued("ncclAllGather (allReduce)"));  // the reduction must follow it
  }
  void* d_recv = nullptr;
  bool recv_staged = false;
  SCCL_CHECK(deviceView(recv, bytes, recv_staging_, false, &d_recv, &recv_staged));
  const cudaError_t reduced =
      cuda_dispatch::reduceRankOrder(d_gathered, count, nranks_, dtype, op, d_recv, stream_);
  if (reduced != cudaSuccess)
    return failed(cudaFailure(reduced, "nccl transport: rank-order reduction"));
  SCCL_CHECK(waitStream("allReduce"));
  return copyBack(recv, d_recv, bytes, recv_staged);
}

scclResult_t NcclTransport::reduceScatter(const void* send, void* recv, size_t recvcount,
                                          scclDataType_t dtype, ReduceOp op) {
  if (broken_ != scclSuccess) return broken_;
  size_t block = 0;
  SCCL_CHECK(checkReduceScatterArguments(send, recv, recvcount, dtype, op, nranks_, &block));
  if (recvcount == 0) return scclSuccess;
  const size_t total = block * size_t(nranks_);
  if (nranks_ == 1 && memorySpaceOf(send) == MemorySpace::Host &&
      memorySpaceOf(recv) == MemorySpace::Host) {
    const void* inputs[1] = {send};
    reduceInRankOrder(inputs, 1, recv, recvcount, dtype, op);
    return scclSuccess;
  }
  void* d_send = nullptr;
  bool send_staged = false;
  SCCL_CHECK(deviceView(send, total, send_staging_, true, &d_send, &send_staged));
  // Slot r of the workspace: rank r's copy of this rank's block (the own one copied, so that
  // recv, which may be that block of send, aliases no input of the reduction).
  void* d_gathered = nullptr;
  SCCL_CHECK(failed(gathered_.reserve(total, &d_gathered)));
  auto* slots = static_cast<char*>(d_gathered);
  const auto* blocks = static_cast<const char*>(d_send);
  const size_t own = size_t(rank_) * block;
  SCCL_CUDA_CHECK(
      cudaMemcpyAsync(slots + own, blocks + own, block, cudaMemcpyDeviceToDevice, stream_),
      "nccl transport: reduceScatter's own block");
  if (nranks_ > 1) {
    SCCL_NCCL_ENQUEUE(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_) continue;
      SCCL_NCCL_ENQUEUE_IN_GROUP(
          ncclSend(blocks + size_t(r) * block, block, ncclUint8, r, comm_, stream_),
          "ncclSend (reduceScatter)");
      SCCL_NCCL_ENQUEUE_IN_GROUP(
          ncclRecv(slots + size_t(r) * block, block, ncclUint8, r, comm_, stream_),
          "ncclRecv (reduceScatter)");
    }
    SCCL_NCCL_ENQUEUE(ncclGroupEnd(), "ncclGroupEnd");
    SCCL_CHECK(awaitEnqueued("reduceScatter (exchange)"));  // the reduction must follow it
  }
  void* d_recv = nullptr;
  bool recv_staged = false;
  SCCL_CHECK(deviceView(recv, block, recv_staging_, false, &d_recv, &recv_staged));
  const cudaError_t reduced =
      cuda_dispatch::reduceRankOrder(d_gathered, recvcount, nranks_, dtype, op, d_recv, stream_);
  if (reduced != cudaSuccess)
    return failed(cudaFailure(reduced, "nccl transport: rank-order reduction"));
  SCCL_CHECK(waitStream("reduceScatter"));
  return copyBack(recv, d_recv, block, recv_staged);
}

scclResult_t NcclTransport::broadcast(void* buf, size_t bytes, int root) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks_));
  if (nranks_ == 1) return scclSuccess;  // the root's buffer is the result
  void* d_buf = nullptr;
  bool staged = false;
  SCCL_CHECK(deviceView(buf, bytes, recv_staging_, rank_ == root, &d_buf, &staged));
  SCCL_NCCL_ENQUEUE(ncclBroadcast(d_buf, d_buf, bytes, ncclUint8, root, comm_, stream_),
                    "ncclBroadcast");
  SCCL_CHECK(waitStream("broadcast"));
  return copyBack(buf, d_buf, bytes, staged && rank_ != root);
}

scclResult_t NcclTransport::send(const void* buf, size_t bytes, int peer, int tag) {
  (void)tag;  // NCCL matches a pair's messages in order; there are no tags
  if (broken_ != scclSuccess) return broken_;
  SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks_, "send peer %d out of range [0, %d)", peer, nranks_);
  void* d_buf = nullptr;
  bool staged = false;
  SCCL_CHECK(deviceView(buf, bytes, send_staging_, true, &d_buf, &staged));
  SCCL_NCCL_ENQUEUE(ncclSend(d_buf, bytes, ncclUint8, peer, comm_, stream_), "ncclSend");
  return waitStream("send");
}

scclResult_t NcclTransport::recv(void* buf, size_t bytes, int peer, int tag) {
  (void)tag;
  if (broken_ != scclSuccess) return broken_;
  SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks_, "recv peer %d out of range [0, %d)", peer, nranks_);
  void* d_buf = nullptr;
  bool staged = false;
  SCCL_CHECK(deviceView(buf, bytes, recv_staging_, false, &d_buf, &staged));
  SCCL_NCCL_ENQUEUE(ncclRecv(d_buf, bytes, ncclUint8, peer, comm_, stream_), "ncclRecv");
  SCCL_CHECK(waitStream("recv"));
  return copyBack(buf, d_buf, bytes, staged);
}

scclResult_t NcclTransport::exchange(const void* send_buf, void* recv_buf, size_t bytes, int peer) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks_, "exchange peer %d out of range [0, %d)", peer,
                   nranks_);
  void* d_send = nullptr;
  void* d_recv = nullptr;
  bool send_staged = false, recv_staged = false;
  SCCL_CHECK(deviceView(send_buf, bytes, send_staging_, true, &d_send, &send_staged));
  SCCL_CHECK(deviceView(recv_buf, bytes, recv_staging_, false, &d_recv, &recv_staged));
  // Grouped: both directions progress together, so two ranks exchanging cannot deadlock.
  SCCL_NCCL_ENQUEUE(ncclGroupStart(), "ncclGroupStart");
  SCCL_NCCL_ENQUEUE_IN_GROUP(ncclSend(d_send, bytes, ncclUint8, peer, comm_, stream_), "ncclSend");
  SCCL_NCCL_ENQUEUE_IN_GROUP(ncclRecv(d_recv, bytes, ncclUint8, peer, comm_, stream_), "ncclRecv");
  SCCL_NCCL_ENQUEUE(ncclGroupEnd(), "ncclGroupEnd");
  SCCL_CHECK(waitStream("exchange"));
  return copyBack(recv_buf, d_recv, bytes, recv_staged);
}

scclResult_t NcclTransport::barrier() {
  if (broken_ != scclSuccess) return broken_;
  if (nranks_ == 1) return scclSuccess;
  void* d_gathered = nullptr;
  SCCL_CHECK(failed(gathered_.reserve(size_t(nranks_), &d_gathered)));
  SCCL_NCCL_ENQUEUE(ncclAllGather(static_cast<char*>(d_gathered) + rank_, d_gathered, 1, ncclUint8,
                                  comm_, stream_),
                    "ncclAllGather (barrier)");
  return waitStream("barrier");
}

scclResult_t NcclTransport::allGatherOnStream(const void* send, void* recv, size_t bytes_per_rank,
                                              void* stream) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_CHECK(checkAllGatherArguments(send, recv, bytes_per_rank, nranks_));
  if (nranks_ == 1) {
    if (send != recv && bytes_per_rank > 0) {
      SCCL_CUDA_CHECK(cudaMemcpyAsync(recv, send, bytes_per_rank, cudaMemcpyDeviceToDevice,
                                      static_cast<cudaStream_t>(stream)),
                      "nccl transport: one-rank all-gather (stream-ordered)");
    }
    return scclSuccess;
  }
  SCCL_NCCL_ENQUEUE(ncclAllGather(send, recv, bytes_per_rank, ncclUint8, comm_,
                                  static_cast<cudaStream_t>(stream)),
                    "ncclAllGather (stream-ordered)");
  return awaitEnqueued("ncclAllGather (stream-ordered)");
}

scclResult_t NcclTransport::broadcastOnStream(void* buf, size_t bytes, int root, void* stream) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks_));
  if (nranks_ == 1 || bytes == 0) return scclSuccess;  // the root's buffer is the result
  SCCL_NCCL_ENQUEUE(
      ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, static_cast<cudaStream_t>(stream)),
      "ncclBroadcast (stream-ordered)");
  return awaitEnqueued("ncclBroadcast (stream-ordered)");
}

scclResult_t NcclTransport::allReduceMaxBytesOnStream(const void* send, void* recv, size_t bytes,
                                                      void* stream) {
  if (broken_ != scclSuccess) return broken_;
  size_t checked = 0;
  SCCL_CHECK(checkAllReduceArguments(send, recv, bytes, scclUint8, ReduceOp::Max, &checked));
  if (bytes == 0) return scclSuccess;
  const cudaStream_t on = static_cast<cudaStream_t>(stream);
  if (nranks_ == 1) {  // as the other stream-ordered collectives: no NCCL call at one rank
    if (send == recv) return scclSuccess;
    const cudaError_t copied = cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, on);
    if (copied != cudaSuccess)
      return failed(cudaFailure(copied, "nccl transport: one-rank max all-reduce (stream-ordered)"));
    return scclSuccess;
  }
  // The maximum of bytes is exact in any order: NCCL's ring reduction, 2 (n-1)/n bytes each way.
  SCCL_NCCL_ENQUEUE(ncclAllReduce(send, recv, bytes, ncclUint8, ncclMax, comm_, on),
                    "ncclAllReduce max (stream-ordered)");
  return awaitEnqueued("ncclAllReduce max (stream-ordered)");
}

scclResult_t NcclTransport::allReduceOnStream(const void* send, void* recv, size_t count,
                                              scclDataType_t dtype, void* gathered, void* stream) {
  if (broken_ != scclSuccess) return broken_;
  size_t bytes = 0;
  SCCL_CHECK(checkAllReduceArguments(send, recv, count, dtype, ReduceOp::Sum, &bytes));
  SCCL_REQUIRE_ARG(gathered != nullptr || count == 0, "allReduceOnStream: gathered is NULL");
  const cudaStream_t on = static_cast<cudaStream_t>(stream);
  const void* reduce_from = gathered;
  if (nranks_ == 1) {
    reduce_from = send;  // one rank: the reduction reads the input itself
  } else {
    SCCL_NCCL_ENQUEUE(ncclAllGather(send, gathered, bytes, ncclUint8, comm_, on),
                      "ncclAllGather (stream-ordered allReduce)");
    SCCL_CHECK(awaitEnqueued("ncclAllGather (stream-ordered allReduce)"));
  }
  // A launch failure leaves the ranks out of step (the others' all-gathers went ahead): broken.
  const cudaError_t reduced =
      cuda_dispatch::reduceRankOrder(reduce_from, count, nranks_, dtype, ReduceOp::Sum, recv, on);
  if (reduced != cudaSuccess)
    return failed(cudaFailure(reduced, "nccl transport: rank-order reduction (stream-ordered)"));
  return scclSuccess;
}

}  // namespace sccl
