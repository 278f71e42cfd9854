// The UCX transport's collectives, on tagged sends and receives. Each collective takes the next
// sequence number (every rank counts the same) and tags its messages (sequence, step) so that
// the messages of consecutive collectives never match each other.
//
// allGather / allGatherV (B bytes per rank, n ranks): direct exchange, every rank sends its block
//   to every other rank and receives theirs, all posted at once: (n-1) B out and in per rank, one
//   latency step. (A ring needs n-1 steps for the same bytes; on the small rank counts this
//   transport serves, one step wins.)
// allReduce (S bytes): results must be ((x_0 + x_1) + x_2) + ... in rank order on every rank
//   (transports/transport.h), which a ring's rotating partial sums or recursive doubling's pairwise
//   sums do not give. So:
//   - small (S <= kGatherAllReduceBytes, or fewer elements than ranks): all-gather the whole
//     vectors and let every rank reduce all n in rank order: (n-1) S per rank, one latency step.
//   - large: reduce-scatter to owners, rank j owning the j-th of n near-equal chunks: every rank
//     sends chunk j to rank j, the owner reduces the n copies with reduceInRankOrder; then the
//     reduced chunks are all-gathered. 2 (n-1)/n S per rank, as a ring all-reduce, in two
//     latency steps.
// reduceScatter (n blocks of B bytes): allReduce's first step with rank r owning block r, every
//   rank sending block r to rank r: (n-1) B out and in per rank, one latency step; the owner's
//   rank-order reduction gives the bits of allReduce's slice.
// broadcast: binomial tree rooted at `root`: ceil(log2 n) steps, S per edge.
// barrier: dissemination, ceil(log2 n) rounds of empty messages to (rank + 2^k) mod n.
#include <cstring>
#include <new>

#include "core/dtype.h"
#include "core/error.h"
#include "transports/collective_arguments.h"
#include "transports/reduce_ops.h"
#include "transports/ucx/ucx_transport.h"

namespace sccl {
namespace {

// Below this many bytes allReduce gathers whole vectors (one step) instead of owning chunks.
constexpr size_t kGatherAllReduceBytes = 64 * 1024;

struct Chunk {
  size_t offset = 0;
  size_t count = 0;
};

// `count` elements in `nranks` near-equal chunks in rank order, the first count % nranks one
// longer (the MPI transport's split, so that both reduce the same way).
Chunk ownedChunk(size_t count, int nranks, int owner) {
  size_t ranks = static_cast<size_t>(nranks), index = static_cast<size_t>(owner);
  size_t base = count / ranks, longer = count % ranks;
  return Chunk{index * base + std::min(index, longer), base + (index < longer ? 1 : 0)};
}

}  // namespace

// ---- all-gathers -----------------------------------------------------------------------------

scclResult_t UcxTransport::allGather(const void* send, void* recv, size_t bytes_per_rank) {
  return guarded([&] {
    SCCL_CHECK(checkAllGatherArguments(send, recv, bytes_per_rank, nranks_));
    std::vector<size_t> bytes(static_cast<size_t>(nranks_), bytes_per_rank);
    std::vector<size_t> offsets(static_cast<size_t>(nranks_));
    for (size_t r = 0; r < offsets.size(); ++r) offsets[r] = r * bytes_per_rank;
    return runAllGatherV(send, bytes_per_rank, recv, bytes.data(), offsets.data(), "allGather");
  });
}

scclResult_t UcxTransport::allGatherV(const void* send, size_t send_bytes, void* recv,
                                      const size_t* recv_bytes, const size_t* recv_offsets) {
  return guarded([&] {
    return runAllGatherV(send, send_bytes, recv, recv_bytes, recv_offsets, "allGatherV");
  });
}

scclResult_t UcxTransport::runAllGatherV(const void* send, size_t send_bytes, void* recv,
                                         const size_t* recv_bytes, const size_t* recv_offsets,
                                         const char* operation) {
  bool any_bytes = false;
  SCCL_CHECK(checkAllGatherVArguments(send, send_bytes, recv, recv_bytes, recv_offsets, rank_,
                                      nranks_, operation, &any_bytes));
  if (!any_bytes) return scclSuccess;
  auto* out = static_cast<std::byte*>(recv);
  const auto* mine = static_cast<const std::byte*>(send);
  const uint64_t sequence = nextSequence();
  Ops ops(this);
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || recv_bytes[r] == 0) continue;
    SCCL_CHECK(
        postRecv(ops, out + recv_offsets[r], recv_bytes[r], r, collectiveTag(r, sequence, 0)));
  }
  for (int r = 0; r < nranks_ && send_bytes > 0; ++r) {
    if (r == rank_) continue;
    SCCL_CHECK(postSend(ops, mine, send_bytes, r, collectiveTag(rank_, sequence, 0)));
  }
  std::byte* own = out + recv_offsets[rank_];
  if (send_bytes > 0 && own != mine) std::memmove(own, mine, send_bytes);
  return waitOps(ops, operation);
}

// ---- allReduce -------------------------------------------------------------------------------

std::byte* UcxTransport::scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    scratch_.reset();  // before the new allocation: never hold both
    scratch_.reset(new (std::nothrow) std::byte[bytes]);
    scratch_bytes_ = scratch_ ? bytes : 0;
  }
  return scratch_.get();
}

scclResult_t UcxTransport::allReduce(const void* send, void* recv, size_t count,
                                     scclDataType_t dtype, ReduceOp op) {
  return guarded([&] { return runAllReduce(send, recv, count, dtype, op); });
}

scclResult_t UcxTransport::runAllReduce(const void* send, void* recv, size_t count,
                                        scclDataType_t dtype, ReduceOp op) {
  size_t total_bytes = 0, gathered_bytes = 0;
  SCCL_CHECK(checkAllReduceArguments(send, recv, count, dtype, op, &total_bytes));
  if (count == 0) return scclSuccess;
  if (nranks_ == 1) {
    const void* inputs[1] = {send};
    reduceInRankOrder(inputs, 1, recv, count, dtype, op);
    return scclSuccess;
  }
  bool small = total_bytes <= kGatherAllReduceBytes || count < static_cast<size_t>(nranks_);
  if (small) {
    SCCL_REQUIRE_ARG(
        !__builtin_mul_overflow(total_bytes, static_cast<size_t>(nranks_), &gathered_bytes),
        "allReduce: %zu bytes times %d ranks overflows size_t", total_bytes, nranks_);
    return allReduceByGather(send, recv, count, dtype, op);
  }
  return allReduceByOwners(send, recv, count, dtype, op);
}

scclResult_t UcxTransport::allReduceByGather(const void* send, void* recv, size_t count,
                                             scclDataType_t dtype, ReduceOp op) {
  const size_t bytes = count * dataTypeSize(dtype), n = static_cast<size_t>(nranks_);
  std::byte* gathered = scratch(bytes * n);
  if (gathered == nullptr)
    return fail(scclSystemError, "allReduce: no memory for %zu bytes", bytes * n);
  const uint64_t sequence = nextSequence();
  Ops ops(this);
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    SCCL_CHECK(postRecv(ops, gathered + static_cast<size_t>(r) * bytes, bytes, r,
                        collectiveTag(r, sequence, 0)));
    SCCL_CHECK(postSend(ops, send, bytes, r, collectiveTag(rank_, sequence, 0)));
  }
  std::memcpy(gathered + static_cast<size_t>(rank_) * bytes, send, bytes);
  SCCL_CHECK(waitOps(ops, "allReduce"));
  std::vector<const void*> inputs(n);
  for (size_t r = 0; r < n; ++r) inputs[r] = gathered + r * bytes;
  reduceInRankOrder(inputs.data(), nranks_, recv, count, dtype, op);
  return scclSuccess;
}

scclResult_t UcxTransport::allReduceByOwners(const void* send, void* recv, size_t count,
                                             scclDataType_t dtype, ReduceOp op) {
  const size_t element = dataTypeSize(dtype), n = static_cast<size_t>(nranks_);
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const Chunk mine = ownedChunk(count, nranks_, rank_);
  const size_t chunk_bytes = mine.count * element;
  // Slot r: rank r's copy of this rank's chunk (this rank's own copy too, so that the output,
  // which may alias the input, aliases none of the reduction's inputs).
  std::byte* copies = scratch(chunk_bytes * n);
  if (copies == nullptr && chunk_bytes > 0) {
    return fail(scclSystemError, "allReduce: no memory for %zu bytes", chunk_bytes * n);
  }
  const uint64_t sequence = nextSequence();
  Ops ops(this);
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    Chunk theirs = ownedChunk(count, nranks_, r);
    if (chunk_bytes > 0) {
      SCCL_CHECK(postRecv(ops, copies + static_cast<size_t>(r) * chunk_bytes, chunk_bytes, r,
                          collectiveTag(r, sequence, 0)));
    }
    if (theirs.count > 0) {
      SCCL_CHECK(postSend(ops, in + theirs.offset * element, theirs.count * element, r,
                          collectiveTag(rank_, sequence, 0)));
    }
  }
  if (chunk_bytes > 0) {
    std::memcpy(copies + static_cast<size_t>(rank_) * chunk_bytes, in + mine.offset * element,
                chunk_bytes);
  }
  SCCL_CHECK(waitOps(ops, "allReduce (reduce-scatter)"));
  if (chunk_bytes > 0) {
    std::vector<const void*> inputs(n);
    for (size_t r = 0; r < n; ++r) inputs[r] = copies + r * chunk_bytes;
    reduceInRankOrder(inputs.data(), nranks_, out + mine.offset * element, mine.count, dtype, op);
  }
  ops.clear();
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    Chunk theirs = ownedChunk(count, nranks_, r);
    if (theirs.count > 0) {
      SCCL_CHECK(postRecv(ops, out + theirs.offset * element, theirs.count * element, r,
                          collectiveTag(r, sequence, 1)));
    }
    if (chunk_bytes > 0) {
      SCCL_CHECK(postSend(ops, out + mine.offset * element, chunk_bytes, r,
                          collectiveTag(rank_, sequence, 1)));
    }
  }
  return waitOps(ops, "allReduce (all-gather)");
}

scclResult_t UcxTransport::reduceScatter(const void* send, void* recv, size_t recvcount,
                                         scclDataType_t dtype, ReduceOp op) {
  return guarded([&] { return runReduceScatter(send, recv, recvcount, dtype, op); });
}

scclResult_t UcxTransport::runReduceScatter(const void* send, void* recv, size_t recvcount,
                                            scclDataType_t dtype, ReduceOp op) {
  size_t block = 0;
  SCCL_CHECK(checkReduceScatterArguments(send, recv, recvcount, dtype, op, nranks_, &block));
  if (recvcount == 0) return scclSuccess;
  const size_t n = static_cast<size_t>(nranks_);
  const auto* in = static_cast<const std::byte*>(send);
  // Slot r: rank r's copy of this rank's block (the own copy too, so that recv, which may be the
  // own block of send, aliases none of the reduction's inputs).
  std::byte* copies = scratch(block * n);
  if (copies == nullptr)
    return fail(scclSystemError, "reduceScatter: no memory for %zu bytes", block * n);
  const uint64_t sequence = nextSequence();
  Ops ops(this);
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    SCCL_CHECK(postRecv(ops, copies + static_cast<size_t>(r) * block, block, r,
                        collectiveTag(r, sequence, 0)));
    SCCL_CHECK(postSend(ops, in + static_cast<size_t>(r) * block, block, r,
                        collectiveTag(rank_, sequence, 0)));
  }
  std::memcpy(copies + static_cast<size_t>(rank_) * block, in + static_cast<size_t>(rank_) * block,
              block);
  SCCL_CHECK(waitOps(ops, "reduceScatter"));
  std::vector<const void*> inputs(n);
  for (size_t r = 0; r < n; ++r) inputs[r] = copies + r * block;
  reduceInRankOrder(inputs.data(), nranks_, recv, recvcount, dtype, op);
  return scclSuccess;
}

// ---- broadcast and barrier -------------------------------------------------------------------

scclResult_t UcxTransport::broadcast(void* buf, size_t bytes, int root) {
  return guarded([&] { return runBroadcast(buf, bytes, root); });
}

scclResult_t UcxTransport::runBroadcast(void* buf, size_t bytes, int root) {
  SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks_));
  if (bytes == 0 || nranks_ == 1) return scclSuccess;
  const uint64_t sequence = nextSequence();
  const int n = nranks_, relative = (rank_ - root + n) % n;
  // Receive from the parent: the relative rank with its lowest set bit cleared.
  int mask = 1;
  while (mask < n) {
    if (relative & mask) {
      int parent = (relative - mask + root) % n;
      Ops ops(this);
      SCCL_CHECK(postRecv(ops, buf, bytes, parent, collectiveTag(parent, sequence, 0)));
      SCCL_CHECK(waitOps(ops, "broadcast"));
      break;
    }
    mask <<= 1;
  }
  // Send to the children: relative + 2^k for every 2^k below that bit.
  Ops ops(this);
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < n) {
      int child = (relative + mask + root) % n;
      SCCL_CHECK(postSend(ops, buf, bytes, child, collectiveTag(rank_, sequence, 0)));
    }
  }
  return waitOps(ops, "broadcast");
}

scclResult_t UcxTransport::barrier() {
  return guarded([&] { return runBarrier(); });
}

scclResult_t UcxTransport::runBarrier() {
  if (nranks_ == 1) return scclSuccess;
  const uint64_t sequence = nextSequence();
  static const uint8_t kEmpty = 0;
  uint8_t sink = 0;
  uint32_t round = 0;
  for (int distance = 1; distance < nranks_; distance <<= 1, ++round) {
    int to = (rank_ + distance) % nranks_, from = (rank_ - distance + nranks_) % nranks_;
    Ops ops(this);
    SCCL_CHECK(postRecv(ops, &sink, 0, from, collectiveTag(from, sequence, round)));
    SCCL_CHECK(postSend(ops, &kEmpty, 0, to, collectiveTag(rank_, sequence, round)));
    SCCL_CHECK(waitOps(ops, "barrier"));
  }
  return scclSuccess;
}

}  // namespace sccl
