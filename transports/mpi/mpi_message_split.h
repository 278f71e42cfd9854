// The arithmetic of the MPI transport, kept free of MPI so that it can be unit-tested alone: how
// a transfer is cut into messages whose sizes fit MPI's int counts, and how allReduce divides a
// vector among the ranks that own (reduce) its parts.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>

namespace sccl::mpi {

// MPI-3.1 counts and displacements are `int`. No single MPI call of this transport gets a count
// or a displacement above this many bytes: larger transfers are cut into pieces. 1 GiB rather
// than INT_MAX because several Open MPI 4.x components have had bugs with messages near 2^31
// bytes, and a few more messages per GiB cost nothing measurable.
inline constexpr size_t kDefaultMaxMessageBytes = size_t{1} << 30;
inline constexpr size_t kLargestAllowedMessageBytes = INT_MAX;

// Number of messages a point-to-point transfer of `bytes` is cut into. At least one, so that a
// zero-byte send still matches its receive.
inline size_t pieceCount(size_t bytes, size_t max_piece_bytes) {
  return bytes == 0 ? 1 : (bytes - 1) / max_piece_bytes + 1;
}

// Byte offset of piece `index` of such a transfer.
inline size_t pieceOffset(size_t index, size_t max_piece_bytes) {
  return index * max_piece_bytes;
}

// Size of piece `index` (< pieceCount) of such a transfer: full pieces, then the remainder.
inline size_t pieceBytes(size_t bytes, size_t max_piece_bytes, size_t index) {
  if (bytes == 0) return 0;
  return std::min(max_piece_bytes, bytes - pieceOffset(index, max_piece_bytes));
}

// The elements [offset, offset + count) that one rank owns in allReduce.
struct ChunkRange {
  size_t offset = 0;
  size_t count = 0;
};

// `count` elements split into `nranks` near-equal chunks in rank order: the first count % nranks
// chunks are one element longer. Every rank computes the same split from (count, nranks).
inline ChunkRange ownedChunk(size_t count, int nranks, int owner) {
  size_t ranks = static_cast<size_t>(nranks);
  size_t index = static_cast<size_t>(owner);
  size_t base = count / ranks;
  size_t longer = count % ranks;
  return ChunkRange{index * base + std::min(index, longer), base + (index < longer ? 1 : 0)};
}

// The longest chunk of that split (rank 0's).
inline size_t largestChunk(size_t count, int nranks) {
  size_t ranks = static_cast<size_t>(nranks);
  return count / ranks + (count % ranks != 0 ? 1 : 0);
}

}  // namespace sccl::mpi
