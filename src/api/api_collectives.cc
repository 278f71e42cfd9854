// Dense collectives over the communicator's transport (the baselines of every benchmark, and
// building blocks for frameworks), on host buffers, or on GPU buffers over a transport that
// carries device memory (core/device_collectives.h). Each agrees on its call record with the
// other ranks before any data moves (comm/call_agreement.h).
#include "api/api_guard.h"
#include <cstring>

#include "api/api_validate.h"
#include "core/divide_by_ranks.h"
#include "comm/call_agreement.h"

namespace {

// Runs a transport operation once the ranks agreed on `record`, and records a failure on the
// communicator. Device buffers go to the transport prepared for them (NCCL, or pinned staging
// over a host transport).
template <typename Operation>
scclResult_t runOnTransport(scclComm* comm, const sccl::CallRecord& record, Operation&& operation,
                            bool on_device = false) {
  return sccl::runAgreedCall(
      comm, record, on_device ? sccl::deviceTransportOf(comm) : *comm->transport, operation);
}

sccl::CallRecord denseRecord(sccl::CallOperation operation, size_t count, scclDataType_t dtype,
                             bool in_place, bool on_device) {
  sccl::CallRecord record = sccl::callRecord(operation);
  record.count = count;
  record.dtype = static_cast<int16_t>(dtype);
  record.flags =
      (in_place ? sccl::CallRecord::kInPlace : 0u) | (on_device ? sccl::CallRecord::kDevice : 0u);
  return record;
}

}  // namespace

extern "C" {

SCCL_API scclResult_t scclAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                                    scclDataType_t datatype, scclRedOp_t op, scclComm_t comm,
                                    void* stream) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    size_t bytes = 0;
    SCCL_CHECK(sccl::requireByteSize(count, datatype, &bytes));
    SCCL_CHECK(sccl::requireRedOp(op));
    SCCL_REQUIRE_ARG(op != scclAvg || sccl::isFloatingType(datatype),
                     "scclAvg needs a floating-point type, not %s", sccl::dataTypeName(datatype));
    bool on_device = false;
    SCCL_CHECK(
        sccl::requireCollectiveBuffers(comm, sendbuf, bytes, recvbuf, bytes, stream, &on_device));
    sccl::CallRecord record =
        denseRecord(sccl::CallOperation::AllReduce, count, datatype, sendbuf == recvbuf, on_device);
    record.redop = static_cast<int16_t>(op);
    SCCL_CHECK(runOnTransport(
        comm, record,
        [&](sccl::Transport& t) {
          return t.allReduce(sendbuf, recvbuf, count, datatype, sccl::transportReduceOp(op));
        },
        on_device));
    if (op != scclAvg) return scclSuccess;
    if (on_device) return sccl::deviceDivideByRanks(recvbuf, count, datatype, comm->nranks, stream);
    return sccl::divideByRanks(recvbuf, count, datatype, comm->nranks);
  });
}

SCCL_API scclResult_t scclAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                    scclDataType_t datatype, scclComm_t comm, void* stream) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    size_t bytes = 0, total = 0;
    SCCL_CHECK(sccl::requireByteSize(sendcount, datatype, &bytes));
    SCCL_REQUIRE_ARG(!__builtin_mul_overflow(bytes, static_cast<size_t>(comm->nranks), &total),
                     "sendcount %zu times %d ranks overflows the address space", sendcount,
                     comm->nranks);
    bool on_device = false;
    SCCL_CHECK(
        sccl::requireCollectiveBuffers(comm, sendbuf, bytes, recvbuf, total, stream, &on_device));
    const bool in_place =
        sendbuf == static_cast<const char*>(recvbuf) + static_cast<size_t>(comm->rank) * bytes;
    return runOnTransport(
        comm, denseRecord(sccl::CallOperation::AllGather, sendcount, datatype, in_place, on_device),
        [&](sccl::Transport& t) { return t.allGather(sendbuf, recvbuf, bytes); }, on_device);
  });
}

SCCL_API scclResult_t scclReduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                        scclDataType_t datatype, scclRedOp_t op, scclComm_t comm,
                                        void* stream) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    size_t block = 0, total = 0;
    SCCL_CHECK(sccl::requireByteSize(recvcount, datatype, &block));
    SCCL_REQUIRE_ARG(!__builtin_mul_overflow(block, static_cast<size_t>(comm->nranks), &total),
                     "recvcount %zu times %d ranks overflows the address space", recvcount,
                     comm->nranks);
    SCCL_CHECK(sccl::requireRedOp(op));
    SCCL_REQUIRE_ARG(op != scclAvg || sccl::isFloatingType(datatype),
                     "scclAvg needs a floating-point type, not %s", sccl::dataTypeName(datatype));
    bool on_device = false;
    SCCL_CHECK(sccl::requireReduceScatterBuffers(comm, sendbuf, total, recvbuf, block, stream,
                                                 &on_device));
    const bool in_place =
        recvbuf == static_cast<const char*>(sendbuf) + static_cast<size_t>(comm->rank) * block;
    sccl::CallRecord record = denseRecord(sccl::CallOperation::ReduceScatter, recvcount, datatype,
                                          in_place && block > 0, on_device);
    record.redop = static_cast<int16_t>(op);
    SCCL_CHECK(runOnTransport(
        comm, record,
        [&](sccl::Transport& t) {
          return t.reduceScatter(sendbuf, recvbuf, recvcount, datatype,
                                 sccl::transportReduceOp(op));
        },
        on_device));
    // Divided element by element as scclAllReduce divides: the bits of its slice.
    if (op != scclAvg) return scclSuccess;
    if (on_device)
      return sccl::deviceDivideByRanks(recvbuf, recvcount, datatype, comm->nranks, stream);
    return sccl::divideByRanks(recvbuf, recvcount, datatype, comm->nranks);
  });
}

SCCL_API scclResult_t scclBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                                    scclDataType_t datatype, int root, scclComm_t comm,
                                    void* stream) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    size_t bytes = 0;
    SCCL_CHECK(sccl::requireByteSize(count, datatype, &bytes));
    SCCL_REQUIRE_ARG(root >= 0 && root < comm->nranks, "root %d out of range [0, %d)", root,
                     comm->nranks);
    const bool root_copies = comm->rank == root && bytes > 0 && sendbuf != recvbuf;
    bool on_device = false;
    SCCL_CHECK(sccl::requireCollectiveBuffers(comm, sendbuf, comm->rank == root ? bytes : 0,
                                              recvbuf, bytes, stream, &on_device));
    if (root_copies && on_device) SCCL_CHECK(sccl::deviceCopy(recvbuf, sendbuf, bytes, stream));
    if (root_copies && !on_device) std::memcpy(recvbuf, sendbuf, bytes);
    sccl::CallRecord record =
        denseRecord(sccl::CallOperation::Broadcast, count, datatype, sendbuf == recvbuf, on_device);
    record.root = root;
    return runOnTransport(
        comm, record, [&](sccl::Transport& t) { return t.broadcast(recvbuf, bytes, root); },
        on_device);
  });
}

SCCL_API scclResult_t scclBarrier(scclComm_t comm) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    return runOnTransport(comm, sccl::callRecord(sccl::CallOperation::Barrier),
                          [&](sccl::Transport& t) { return t.barrier(); });
  });
}

}  // extern "C"
