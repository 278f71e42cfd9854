#include "transports/collective_arguments.h"

#include "core/dtype.h"
#include "core/error.h"

namespace sccl {

scclResult_t checkAllGatherArguments(const void* send, const void* recv, size_t bytes_per_rank,
                                     int nranks) {
  size_t total = 0;
  SCCL_REQUIRE_ARG(!__builtin_mul_overflow(bytes_per_rank, static_cast<size_t>(nranks), &total),
                   "allGather: %zu bytes times %d ranks overflows size_t", bytes_per_rank, nranks);
  SCCL_REQUIRE_ARG((send != nullptr && recv != nullptr) || bytes_per_rank == 0,
                   "allGather: NULL buffer (send %p, recv %p) for %zu bytes per rank", send, recv,
                   bytes_per_rank);
  return scclSuccess;
}

scclResult_t checkAllGatherVArguments(const void* send, size_t send_bytes, const void* recv,
                                      const size_t* recv_bytes, const size_t* recv_offsets,
                                      int rank, int nranks, const char* operation,
                                      bool* any_bytes) {
  SCCL_REQUIRE_ARG(recv_bytes != nullptr && recv_offsets != nullptr,
                   "%s: recv_bytes or recv_offsets is NULL", operation);
  SCCL_REQUIRE_ARG(send_bytes == recv_bytes[rank],
                   "%s: rank %d sends %zu bytes but recv_bytes says %zu", operation, rank,
                   send_bytes, recv_bytes[rank]);
  SCCL_REQUIRE_ARG(send != nullptr || send_bytes == 0, "%s: send is NULL", operation);
  size_t any = 0;
  for (int r = 0; r < nranks; ++r) {
    size_t end = 0;
    SCCL_REQUIRE_ARG(!__builtin_add_overflow(recv_offsets[r], recv_bytes[r], &end),
                     "%s: offset %zu + %zu bytes of rank %d overflows size_t", operation,
                     recv_offsets[r], recv_bytes[r], r);
    any |= recv_bytes[r];
  }
  SCCL_REQUIRE_ARG(recv != nullptr || any == 0, "%s: recv is NULL", operation);
  *any_bytes = any != 0;
  return scclSuccess;
}

scclResult_t checkAllReduceArguments(const void* send, const void* recv, size_t count,
                                     scclDataType_t dtype, ReduceOp op, size_t* total_bytes) {
  SCCL_REQUIRE_ARG(isValidDataType(dtype), "allReduce: unknown data type %d",
                   static_cast<int>(dtype));
  SCCL_REQUIRE_ARG(isValidReduceOp(op), "allReduce: unknown op %d", static_cast<int>(op));
  SCCL_REQUIRE_ARG(byteSize(count, dtype, total_bytes),
                   "allReduce: %zu elements of %s overflow size_t", count, dataTypeName(dtype));
  SCCL_REQUIRE_ARG((send != nullptr && recv != nullptr) || count == 0,
                   "allReduce: NULL buffer (send %p, recv %p) for %zu elements", send, recv, count);
  return scclSuccess;
}

scclResult_t checkReduceScatterArguments(const void* send, const void* recv, size_t recvcount,
                                         scclDataType_t dtype, ReduceOp op, int nranks,
                                         size_t* block_bytes) {
  SCCL_REQUIRE_ARG(isValidDataType(dtype), "reduceScatter: unknown data type %d",
                   static_cast<int>(dtype));
  SCCL_REQUIRE_ARG(isValidReduceOp(op), "reduceScatter: unknown op %d", static_cast<int>(op));
  size_t total = 0;
  SCCL_REQUIRE_ARG(byteSize(recvcount, dtype, block_bytes) &&
                       !__builtin_mul_overflow(*block_bytes, static_cast<size_t>(nranks), &total),
                   "reduceScatter: %d x %zu elements of %s overflow size_t", nranks, recvcount,
                   dataTypeName(dtype));
  SCCL_REQUIRE_ARG((send != nullptr && recv != nullptr) || recvcount == 0,
                   "reduceScatter: NULL buffer (send %p, recv %p) for %zu elements per rank", send,
                   recv, recvcount);
  return scclSuccess;
}

scclResult_t checkBroadcastArguments(const void* buf, size_t bytes, int root, int nranks) {
  SCCL_REQUIRE_ARG(root >= 0 && root < nranks, "broadcast: root %d out of range [0, %d)", root,
                   nranks);
  SCCL_REQUIRE_ARG(buf != nullptr || bytes == 0, "broadcast: buffer is NULL but bytes is %zu",
                   bytes);
  return scclSuccess;
}

}  // namespace sccl
