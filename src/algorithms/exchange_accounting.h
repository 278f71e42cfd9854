// Shared by the reductions: timing of collectives, the communicator's failure record, and the
// bytes each collective moves in and out of this rank.
//
// Bytes are the bandwidth-optimal per-rank volumes that nccl-tests' bus bandwidth assumes:
// all-gather of B bytes per rank sends B and receives (n-1) B; all-reduce of S bytes sends and
// receives 2 (n-1)/n S (reduce-scatter + all-gather; our transports move exactly that);
// broadcast of B: the root sends B, every other rank receives B. With one rank nothing moves.
#pragma once

#include <chrono>

#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "sparsifier/sparsifier.h"

namespace sccl {

template <typename Operation>
scclResult_t timedCollective(SparseCall& call, Operation&& operation) {
  auto start = std::chrono::steady_clock::now();
  scclComm* comm = call.sp->comm;
  // A call on device buffers (call.device set) exchanges through the transport prepared for
  // them; its host arrays (headers, indices) pass through that transport untouched.
  Transport& transport = call.device != nullptr ? deviceTransportOf(comm) : *comm->transport;
  scclResult_t result = commRecordFailure(comm, operation(transport));
  call.time_comm_us +=
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return result;
}

inline void countAllGather(SparseCall& call, uint64_t bytes_per_rank) {
  int n = call.sp->comm->nranks;
  if (n == 1) return;
  call.bytes_sent += bytes_per_rank;
  call.bytes_received += bytes_per_rank * uint64_t(n - 1);
}

inline void countAllReduce(SparseCall& call, uint64_t bytes) {
  int n = call.sp->comm->nranks;
  uint64_t moved = bytes * 2 * uint64_t(n - 1) / uint64_t(n);
  call.bytes_sent += moved;
  call.bytes_received += moved;
}

inline void countBroadcast(SparseCall& call, uint64_t bytes, int root) {
  if (call.sp->comm->nranks == 1) return;
  if (call.sp->comm->rank == root) {
    call.bytes_sent += bytes;
  } else {
    call.bytes_received += bytes;
  }
}

}  // namespace sccl
