// Shared by the reductions: timing of collectives, the communicator's failure record, and the
// bytes each collective moves in and out of this rank.
//
// Bytes: core/collective_bytes.h (the cost model in tuning/ uses the same definition).
#pragma once

#include <chrono>

#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "core/collective_bytes.h"
#include "algorithms/reduction_context.h"

namespace sccl {

// The time since `start`, for the calls' select / communicate / other split.
inline double microsecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

template <typename Operation>
scclResult_t timedCollective(SparseCall& call, Operation&& operation) {
  auto start = std::chrono::steady_clock::now();
  scclComm* comm = call.ctx->comm;
  // A call on device buffers (call.device set) exchanges through the transport prepared for
  // them; its host arrays (headers, indices) pass through that transport untouched.
  Transport& transport = call.device != nullptr ? deviceTransportOf(comm) : *comm->transport;
  scclResult_t result = commRecordFailure(comm, operation(transport));
  call.time_comm_us += microsecondsSince(start);
  return result;
}

inline void addWireBytes(SparseCall& call, WireBytes bytes) {
  call.bytes_sent += bytes.sent;
  call.bytes_received += bytes.received;
}

inline void countAllGather(SparseCall& call, uint64_t bytes_per_rank) {
  addWireBytes(call, allGatherWireBytes(bytes_per_rank, call.ctx->comm->nranks));
}

inline void countAllReduce(SparseCall& call, uint64_t bytes) {
  addWireBytes(call, allReduceWireBytes(bytes, call.ctx->comm->nranks));
}

inline void countBroadcast(SparseCall& call, uint64_t bytes, int root) {
  addWireBytes(call,
               broadcastWireBytes(bytes, call.ctx->comm->nranks, call.ctx->comm->rank == root));
}

}  // namespace sccl
