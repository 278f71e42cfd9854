// The arithmetic that keeps every MPI count within int (pieces of large transfers) and divides
// allReduce's vector among owners. Pure functions: these run the same on every rank.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "transports/mpi/mpi_message_split.h"

using sccl::mpi::largestChunk;
using sccl::mpi::ownedChunk;
using sccl::mpi::pieceBytes;
using sccl::mpi::pieceCount;
using sccl::mpi::pieceOffset;

TEST_CASE("mpi split: a zero-byte message is still one piece", "[mpi][split]") {
  CHECK(pieceCount(0, 64) == 1);
  CHECK(pieceBytes(0, 64, 0) == 0);
}

TEST_CASE("mpi split: pieces cover a transfer exactly and never exceed the limit", "[mpi][split]") {
  for (size_t limit : {size_t{1}, size_t{7}, size_t{64}, size_t{1} << 30}) {
    for (size_t bytes :
         {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{4096}}) {
      size_t pieces = pieceCount(bytes, limit);
      size_t covered = 0;
      for (size_t i = 0; i < pieces; ++i) {
        CHECK(pieceOffset(i, limit) == covered);
        CHECK(pieceBytes(bytes, limit, i) >= 1);
        CHECK(pieceBytes(bytes, limit, i) <= limit);
        covered += pieceBytes(bytes, limit, i);
      }
      CAPTURE(limit, bytes);
      CHECK(covered == bytes);
    }
  }
}

TEST_CASE("mpi split: transfers above INT_MAX become pieces that each fit an int", "[mpi][split]") {
  const size_t limit = sccl::mpi::kDefaultMaxMessageBytes;
  const size_t huge = (size_t{5} << 30) + 12345;  // 5 GiB and change
  REQUIRE(pieceCount(huge, limit) == 6);
  for (size_t i = 0; i < 5; ++i) CHECK(pieceBytes(huge, limit, i) == limit);
  CHECK(pieceBytes(huge, limit, 5) == 12345);
  CHECK(pieceCount(size_t{INT_MAX} + 1, size_t{INT_MAX}) == 2);
  CHECK(pieceBytes(size_t{INT_MAX} + 1, size_t{INT_MAX}, 1) == 1);
  CHECK(sccl::mpi::kDefaultMaxMessageBytes <= sccl::mpi::kLargestAllowedMessageBytes);
  const size_t beyond_32_bits = (size_t{1} << 40) + 3;
  size_t last = pieceCount(beyond_32_bits, limit) - 1;
  CHECK(pieceOffset(last, limit) + pieceBytes(beyond_32_bits, limit, last) == beyond_32_bits);
}

TEST_CASE("mpi split: owned chunks partition the vector in rank order", "[mpi][split]") {
  for (int nranks : {1, 2, 3, 4, 7, 64}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{7}, size_t{1000}, size_t{1001}}) {
      size_t next = 0, longest = 0, shortest = SIZE_MAX;
      for (int r = 0; r < nranks; ++r) {
        sccl::mpi::ChunkRange chunk = ownedChunk(count, nranks, r);
        CHECK(chunk.offset == next);
        next += chunk.count;
        longest = std::max(longest, chunk.count);
        shortest = std::min(shortest, chunk.count);
      }
      CAPTURE(nranks, count);
      CHECK(next == count);
      CHECK(longest - shortest <= 1);
      CHECK(longest == largestChunk(count, nranks));
      CHECK(ownedChunk(count, nranks, 0).count == longest);
    }
  }
}

TEST_CASE("mpi split: chunks of a vector beyond 2^32 elements keep exact offsets", "[mpi][split]") {
  const size_t count = (size_t{3} << 32) + 2;
  sccl::mpi::ChunkRange last = ownedChunk(count, 3, 2);
  CHECK(last.offset + last.count == count);
  CHECK(ownedChunk(count, 3, 0).count == (size_t{1} << 32) + 1);
  CHECK(ownedChunk(count, 3, 1).offset == (size_t{1} << 32) + 1);
}
