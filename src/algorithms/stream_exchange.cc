// OnStreamExchange and StagedExchange: see stream_exchange.h.
#include "algorithms/stream_exchange.h"

#include "algorithms/exchange_accounting.h"
#include "core/dtype.h"
#include "core/error.h"
#include "transports/stream_collectives.h"

namespace sccl {

scclResult_t OnStreamExchange::allGather(SparseCall& call, const void* send, void* recv,
                                         size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return scclSuccess;
  SCCL_CHECK(timedCollective(call, [&](Transport&) {
    return collectives_.allGatherOnStream(send, recv, bytes_per_rank, stream_);
  }));
  countAllGather(call, bytes_per_rank);
  return scclSuccess;
}

scclResult_t OnStreamExchange::allReduceSum(SparseCall& call, const void* send, void* recv,
                                            size_t count, scclDataType_t dtype) {
  if (count == 0) return scclSuccess;
  const size_t bytes = count * dataTypeSize(dtype);
  void* scratch = nullptr;
  SCCL_CHECK(staging_.buffer(DeviceStaging::kReduceScratch, bytes * size_t(call.ctx->comm->nranks),
                             &scratch));
  SCCL_CHECK(timedCollective(call, [&](Transport&) {
    return collectives_.allReduceOnStream(send, recv, count, dtype, scratch, stream_);
  }));
  countAllReduce(call, bytes);
  return scclSuccess;
}

scclResult_t OnStreamExchange::allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                                 size_t bytes) {
  if (bytes == 0) return scclSuccess;
  SCCL_CHECK(timedCollective(call, [&](Transport&) {
    return collectives_.allReduceMaxBytesOnStream(send, recv, bytes, stream_);
  }));
  countAllReduce(call, bytes);
  return scclSuccess;
}

scclResult_t OnStreamExchange::broadcast(SparseCall& call, void* buf, size_t bytes, int root) {
  if (bytes == 0) return scclSuccess;
  SCCL_CHECK(timedCollective(
      call, [&](Transport&) { return collectives_.broadcastOnStream(buf, bytes, root, stream_); }));
  countBroadcast(call, bytes, root);
  return scclSuccess;
}

scclResult_t StagedExchange::broadcast(SparseCall& call, void* buf, size_t bytes, int root) {
  if (bytes == 0) return scclSuccess;
  const bool is_root = call.ctx->comm->rank == root;
  void* host = nullptr;
  SCCL_CHECK(staging_.hostBuffer(DeviceStaging::kSendHost, bytes, &host));
  if (is_root) {
    SCCL_CHECK(staging_.readBack(host, buf, bytes));
    SCCL_CHECK(staging_.synchronize());
  }
  SCCL_CHECK(timedCollective(call, [&](Transport& t) { return t.broadcast(host, bytes, root); }));
  countBroadcast(call, bytes, root);
  return is_root ? scclSuccess : staging_.toDevice(buf, host, bytes);
}

scclResult_t StagedExchange::allGather(SparseCall& call, const void* send, void* recv,
                                       size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return scclSuccess;
  const size_t nranks = size_t(call.ctx->comm->nranks);
  void* host_send = nullptr;
  void* host_recv = nullptr;
  SCCL_CHECK(staging_.hostBuffer(DeviceStaging::kSendHost, bytes_per_rank, &host_send));
  SCCL_CHECK(staging_.hostBuffer(DeviceStaging::kReceiveHost, bytes_per_rank * nranks, &host_recv));
  SCCL_CHECK(staging_.readBack(host_send, send, bytes_per_rank));
  SCCL_CHECK(staging_.synchronize());
  SCCL_CHECK(timedCollective(
      call, [&](Transport& t) { return t.allGather(host_send, host_recv, bytes_per_rank); }));
  countAllGather(call, bytes_per_rank);
  return staging_.toDevice(recv, host_recv, bytes_per_rank * nranks);
}

scclResult_t StagedExchange::allReduceSum(SparseCall& call, const void* send, void* recv,
                                          size_t count, scclDataType_t dtype) {
  if (count == 0) return scclSuccess;
  const size_t bytes = count * dataTypeSize(dtype);
  void* host = nullptr;
  SCCL_CHECK(staging_.hostBuffer(DeviceStaging::kSendHost, bytes, &host));
  SCCL_CHECK(staging_.readBack(host, send, bytes));
  SCCL_CHECK(staging_.synchronize());
  SCCL_CHECK(timedCollective(
      call, [&](Transport& t) { return t.allReduce(host, host, count, dtype, ReduceOp::Sum); }));
  countAllReduce(call, bytes);
  return staging_.toDevice(recv, host, bytes);
}

scclResult_t StagedExchange::allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                               size_t bytes) {
  if (bytes == 0) return scclSuccess;
  void* host = nullptr;
  SCCL_CHECK(staging_.hostBuffer(DeviceStaging::kSendHost, bytes, &host));
  SCCL_CHECK(staging_.readBack(host, send, bytes));
  SCCL_CHECK(staging_.synchronize());
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allReduce(host, host, bytes, scclUint8, ReduceOp::Max);
  }));
  countAllReduce(call, bytes);
  return staging_.toDevice(recv, host, bytes);
}

// The host transport of the communicator, whatever a device call may have prepared beside it.
scclResult_t HostExchange::allGather(SparseCall& call, const void* send, void* recv,
                                     size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return scclSuccess;
  Transport& t = *call.ctx->comm->transport;
  SCCL_CHECK(
      timedCollective(call, [&](Transport&) { return t.allGather(send, recv, bytes_per_rank); }));
  countAllGather(call, bytes_per_rank);
  return scclSuccess;
}

scclResult_t HostExchange::allReduceSum(SparseCall& call, const void* send, void* recv,
                                        size_t count, scclDataType_t dtype) {
  if (count == 0) return scclSuccess;
  Transport& t = *call.ctx->comm->transport;
  SCCL_CHECK(timedCollective(
      call, [&](Transport&) { return t.allReduce(send, recv, count, dtype, ReduceOp::Sum); }));
  countAllReduce(call, count * dataTypeSize(dtype));
  return scclSuccess;
}

scclResult_t HostExchange::allReduceMaxBytes(SparseCall& call, const void* send, void* recv,
                                             size_t bytes) {
  if (bytes == 0) return scclSuccess;
  Transport& t = *call.ctx->comm->transport;
  SCCL_CHECK(timedCollective(
      call, [&](Transport&) { return t.allReduce(send, recv, bytes, scclUint8, ReduceOp::Max); }));
  countAllReduce(call, bytes);
  return scclSuccess;
}

scclResult_t HostExchange::broadcast(SparseCall& call, void* buf, size_t bytes, int root) {
  if (bytes == 0) return scclSuccess;
  Transport& t = *call.ctx->comm->transport;
  SCCL_CHECK(timedCollective(call, [&](Transport&) { return t.broadcast(buf, bytes, root); }));
  countBroadcast(call, bytes, root);
  return scclSuccess;
}

}  // namespace sccl
