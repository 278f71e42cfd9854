// The MPI transport's gathers, allReduce and reduceScatter.
//
// allReduce (S bytes, n ranks): the vector is split into n near-equal chunks in rank order and
// rank j owns chunk j. (1) Every rank sends chunk j of its input to rank j (MPI_Ialltoallv):
// (n-1)/n S bytes out per rank. (2) Each owner reduces the n copies of its chunk with
// reduceInRankOrder, ((x_0 + x_1) + x_2) + ..., exactly what every transport computes. (3) The
// reduced chunks are all-gathered in place (MPI_Iallgatherv): another (n-1)/n S. Total
// 2(n-1)/n S per rank, as a ring allreduce, in two latency steps (plus MPI's internal ones).
//
// When a count or displacement would exceed the transport's message limit (1 GiB by default,
// MPI counts being int), the same steps run as direct point-to-point exchanges cut into pieces
// (exchangeWithPeers); the bytes on the wire are the same. The choice depends only on arguments
// that every rank passes identically, so all ranks take the same path.
#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "transports/collective_arguments.h"
#include "transports/mpi/mpi_transport.h"
#include "transports/reduce_ops.h"

namespace sccl {
namespace {

// Fills an int count/displacement array for one MPI call; the caller has checked that every
// value fits the message limit (<= INT_MAX).
void toMpiInts(const size_t* values, int n, std::vector<int>* out) {
  out->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) (*out)[i] = static_cast<int>(values[i]);
}

}  // namespace

// ---- all-gathers ---------------------------------------------------------------------------

scclResult_t MpiTransport::allGather(const void* send, void* recv, size_t bytes_per_rank) {
  return guarded([&] { return runAllGather(send, recv, bytes_per_rank); });
}

scclResult_t MpiTransport::runAllGather(const void* send, void* recv, size_t bytes_per_rank) {
  SCCL_CHECK(checkAllGatherArguments(send, recv, bytes_per_rank, nranks_));
  if (bytes_per_rank == 0) return scclSuccess;
  const size_t total = bytes_per_rank * static_cast<size_t>(nranks_);
  auto* out = static_cast<std::byte*>(recv);
  const auto* mine = static_cast<const std::byte*>(send);
  bool in_place = mine == out + static_cast<size_t>(rank_) * bytes_per_rank;
  if (total <= max_message_bytes_) {
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    int bytes = static_cast<int>(bytes_per_rank);
    SCCL_CHECK(mpi::checkMpi(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, bytes, MPI_BYTE, recv,
                                            bytes, MPI_BYTE, comm_, &requests[0]),
                             "allGather (MPI_Iallgather)"));
    return waitAll(requests, nullptr, "allGather");
  }
  std::vector<PeerTransfer> transfers;
  for (int r = 0; r < nranks_; ++r) {
    transfers.push_back(PeerTransfer{
        r, mine, bytes_per_rank, out + static_cast<size_t>(r) * bytes_per_rank, bytes_per_rank});
  }
  return exchangeWithPeers(transfers, "allGather");
}

scclResult_t MpiTransport::allGatherV(const void* send, size_t send_bytes, void* recv,
                                      const size_t* recv_bytes, const size_t* recv_offsets) {
  return guarded([&] { return runAllGatherV(send, send_bytes, recv, recv_bytes, recv_offsets); });
}

scclResult_t MpiTransport::runAllGatherV(const void* send, size_t send_bytes, void* recv,
                                         const size_t* recv_bytes, const size_t* recv_offsets) {
  bool any_bytes = false;
  SCCL_CHECK(checkAllGatherVArguments(send, send_bytes, recv, recv_bytes, recv_offsets, rank_,
                                      nranks_, "allGatherV", &any_bytes));
  if (!any_bytes) return scclSuccess;
  bool fits_one_call = true;
  for (int r = 0; r < nranks_; ++r) {
    fits_one_call = fits_one_call && recv_bytes[r] <= max_message_bytes_ &&
                    recv_offsets[r] <= max_message_bytes_;
  }
  auto* out = static_cast<std::byte*>(recv);
  const auto* mine = static_cast<const std::byte*>(send);
  if (fits_one_call) {
    CallMemory& memory = *call_memory_;
    toMpiInts(recv_bytes, nranks_, &memory.recv_counts);
    toMpiInts(recv_offsets, nranks_, &memory.recv_displs);
    bool in_place = mine == out + recv_offsets[rank_];
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    SCCL_CHECK(
        mpi::checkMpi(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : send, static_cast<int>(send_bytes),
                                      MPI_BYTE, recv, memory.recv_counts.data(),
                                      memory.recv_displs.data(), MPI_BYTE, comm_, &requests[0]),
                      "allGatherV (MPI_Iallgatherv)"));
    return waitAll(requests, nullptr, "allGatherV");
  }
  std::vector<PeerTransfer> transfers;
  for (int r = 0; r < nranks_; ++r) {
    transfers.push_back(PeerTransfer{r, mine, send_bytes, out + recv_offsets[r], recv_bytes[r]});
  }
  return exchangeWithPeers(transfers, "allGatherV");
}

// ---- allReduce -----------------------------------------------------------------------------

scclResult_t MpiTransport::allReduce(const void* send, void* recv, size_t count,
                                     scclDataType_t dtype, ReduceOp op) {
  return guarded([&] { return runAllReduce(send, recv, count, dtype, op); });
}

scclResult_t MpiTransport::runAllReduce(const void* send, void* recv, size_t count,
                                        scclDataType_t dtype, ReduceOp op) {
  size_t total_bytes = 0, scratch_bytes = 0;
  SCCL_CHECK(checkAllReduceArguments(send, recv, count, dtype, op, &total_bytes));
  size_t element_bytes = dataTypeSize(dtype);
  size_t chunk_bytes = mpi::ownedChunk(count, nranks_, rank_).count * element_bytes;
  SCCL_REQUIRE_ARG(
      !__builtin_mul_overflow(chunk_bytes, static_cast<size_t>(nranks_), &scratch_bytes),
      "allReduce: %zu elements of %s overflow size_t", count, dataTypeName(dtype));
  if (count == 0) return scclSuccess;
  if (nranks_ == 1) {
    const void* inputs[1] = {send};
    reduceInRankOrder(inputs, 1, recv, count, dtype, op);
    return scclSuccess;
  }
  std::vector<mpi::ChunkRange> chunks(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) chunks[size_t(r)] = mpi::ownedChunk(count, nranks_, r);
  SCCL_CHECK(scatterChunksToOwners(static_cast<const std::byte*>(send), chunks, element_bytes,
                                   "allReduce (chunks to owners)"));
  reduceOwnedChunk(chunks,
                   static_cast<std::byte*>(recv) + chunks[size_t(rank_)].offset * element_bytes,
                   dtype, op);
  return gatherReducedChunks(static_cast<std::byte*>(recv), count, element_bytes);
}

// ---- reduceScatter --------------------------------------------------------------------------

scclResult_t MpiTransport::reduceScatter(const void* send, void* recv, size_t recvcount,
                                         scclDataType_t dtype, ReduceOp op) {
  return guarded([&] { return runReduceScatter(send, recv, recvcount, dtype, op); });
}

// allReduce's steps 1 and 2 with rank r owning block r: (n-1)/n of the input out per rank, one
// exchange, the same rank-order reduction (so the bits of allReduce's slice).
scclResult_t MpiTransport::runReduceScatter(const void* send, void* recv, size_t recvcount,
                                            scclDataType_t dtype, ReduceOp op) {
  size_t block_bytes = 0;
  SCCL_CHECK(checkReduceScatterArguments(send, recv, recvcount, dtype, op, nranks_, &block_bytes));
  if (recvcount == 0) return scclSuccess;
  std::vector<mpi::ChunkRange> blocks(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) blocks[size_t(r)] = {size_t(r) * recvcount, recvcount};
  if (nranks_ > 1) {
    SCCL_CHECK(scatterChunksToOwners(static_cast<const std::byte*>(send), blocks,
                                     dataTypeSize(dtype), "reduceScatter (blocks to owners)"));
  } else {
    // One rank: the reduction of the one input (NaN made canonical as with more ranks).
    call_memory_->scratch.assign(static_cast<const std::byte*>(send),
                                 static_cast<const std::byte*>(send) + block_bytes);
  }
  // Reduced from the scratch copies, so recv may be the own block of send (in place).
  reduceOwnedChunk(blocks, static_cast<std::byte*>(recv), dtype, op);
  return scclSuccess;
}

void MpiTransport::reduceOwnedChunk(const std::vector<mpi::ChunkRange>& chunks, std::byte* out,
                                    scclDataType_t dtype, ReduceOp op) {
  const size_t chunk_bytes = chunks[size_t(rank_)].count * dataTypeSize(dtype);
  std::vector<const void*> inputs(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r)
    inputs[size_t(r)] = call_memory_->scratch.data() + static_cast<size_t>(r) * chunk_bytes;
  reduceInRankOrder(inputs.data(), nranks_, out, chunks[size_t(rank_)].count, dtype, op);
}

// Step 1: chunk j of this rank's input goes to scratch slot `rank` on rank j.
scclResult_t MpiTransport::scatterChunksToOwners(const std::byte* send,
                                                 const std::vector<mpi::ChunkRange>& chunks,
                                                 size_t element_bytes, const char* operation) {
  size_t my_chunk_bytes = chunks[size_t(rank_)].count * element_bytes;
  call_memory_->scratch.resize(my_chunk_bytes * static_cast<size_t>(nranks_));
  std::byte* scratch = call_memory_->scratch.data();
  std::vector<size_t> send_counts(nranks_), send_displs(nranks_), recv_counts(nranks_),
      recv_displs(nranks_);
  // The largest count or displacement either side uses, the same on every rank.
  size_t largest = 0;
  for (int r = 0; r < nranks_; ++r) {
    const mpi::ChunkRange& chunk = chunks[size_t(r)];
    send_counts[r] = chunk.count * element_bytes;
    send_displs[r] = chunk.offset * element_bytes;
    recv_counts[r] = my_chunk_bytes;
    recv_displs[r] = static_cast<size_t>(r) * my_chunk_bytes;
    largest = std::max(
        {largest, send_displs[r] + send_counts[r], static_cast<size_t>(nranks_) * send_counts[r]});
  }
  if (largest > max_message_bytes_) {
    std::vector<PeerTransfer> transfers;
    for (int r = 0; r < nranks_; ++r) {
      transfers.push_back(PeerTransfer{r, send + send_displs[r], send_counts[r],
                                       scratch + recv_displs[r], recv_counts[r]});
    }
    return exchangeWithPeers(transfers, operation);
  }
  CallMemory& memory = *call_memory_;
  toMpiInts(send_counts.data(), nranks_, &memory.send_counts);
  toMpiInts(send_displs.data(), nranks_, &memory.send_displs);
  toMpiInts(recv_counts.data(), nranks_, &memory.recv_counts);
  toMpiInts(recv_displs.data(), nranks_, &memory.recv_displs);
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  SCCL_CHECK(
      mpi::checkMpi(MPI_Ialltoallv(send, memory.send_counts.data(), memory.send_displs.data(),
                                   MPI_BYTE, scratch, memory.recv_counts.data(),
                                   memory.recv_displs.data(), MPI_BYTE, comm_, &requests[0]),
                    operation));
  return waitAll(requests, nullptr, operation);
}

// Step 3: every rank's reduced chunk, already in place in recv, goes to every other rank.
scclResult_t MpiTransport::gatherReducedChunks(std::byte* recv, size_t count,
                                               size_t element_bytes) {
  std::vector<size_t> chunk_bytes(nranks_), chunk_offsets(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    mpi::ChunkRange chunk = mpi::ownedChunk(count, nranks_, r);
    chunk_bytes[r] = chunk.count * element_bytes;
    chunk_offsets[r] = chunk.offset * element_bytes;
  }
  return runAllGatherV(recv + chunk_offsets[rank_], chunk_bytes[rank_], recv, chunk_bytes.data(),
                       chunk_offsets.data());
}

// ---- the large-transfer path ---------------------------------------------------------------

// Every transfer's receive is posted before any send so that arriving pieces find their buffer.
// Both sides cut a transfer into the same pieces and MPI keeps messages between a pair on one tag
// in order, so piece k of a transfer matches piece k on the other side.
scclResult_t MpiTransport::exchangeWithPeers(const std::vector<PeerTransfer>& transfers,
                                             const char* operation) {
  std::vector<MPI_Request> requests;
  std::vector<size_t> expected_bytes;
  for (const PeerTransfer& t : transfers) {
    if (t.peer == rank_) {
      SCCL_REQUIRE_ARG(t.send_bytes == t.recv_bytes, "%s: self transfer of %zu != %zu bytes",
                       operation, t.send_bytes, t.recv_bytes);
      if (t.send_bytes > 0 && t.send != t.recv) std::memmove(t.recv, t.send, t.send_bytes);
      continue;
    }
    if (t.recv_bytes == 0) continue;
    for (size_t i = 0; i < mpi::pieceCount(t.recv_bytes, max_message_bytes_); ++i) {
      size_t bytes = mpi::pieceBytes(t.recv_bytes, max_message_bytes_, i);
      requests.push_back(MPI_REQUEST_NULL);
      expected_bytes.push_back(bytes);
      SCCL_CHECK(mpi::checkMpi(
          MPI_Irecv(t.recv + mpi::pieceOffset(i, max_message_bytes_), static_cast<int>(bytes),
                    MPI_BYTE, t.peer, kCollectiveTag, comm_, &requests.back()),
          operation));
    }
  }
  size_t receives = requests.size();
  for (const PeerTransfer& t : transfers) {
    if (t.peer == rank_ || t.send_bytes == 0) continue;
    for (size_t i = 0; i < mpi::pieceCount(t.send_bytes, max_message_bytes_); ++i) {
      size_t bytes = mpi::pieceBytes(t.send_bytes, max_message_bytes_, i);
      requests.push_back(MPI_REQUEST_NULL);
      SCCL_CHECK(mpi::checkMpi(
          MPI_Isend(t.send + mpi::pieceOffset(i, max_message_bytes_), static_cast<int>(bytes),
                    MPI_BYTE, t.peer, kCollectiveTag, comm_, &requests.back()),
          operation));
    }
  }
  std::vector<MPI_Status> statuses;
  SCCL_CHECK(waitAll(requests, &statuses, operation));
  for (size_t i = 0; i < receives; ++i) {
    int received = 0;
    MPI_Get_count(&statuses[i], MPI_BYTE, &received);
    if (static_cast<size_t>(received) != expected_bytes[i]) {
      return fail(scclInvalidUsage,
                  "%s: %s got a %d-byte piece where %zu were expected; the ranks "
                  "passed different sizes",
                  label_.c_str(), operation, received, expected_bytes[i]);
    }
  }
  return scclSuccess;
}

}  // namespace sccl
