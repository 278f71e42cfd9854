// allGather, allGatherV, broadcast and barrier of the MPI transport on every rank of the job:
// byte patterns derived from (seed, rank, index) checked exactly, in-place forms, uneven and
// zero-length contributions, every root, and the same with a small message limit so that the
// large-transfer paths (pieces, point-to-point exchange) run on small buffers.
#include <catch2/catch.hpp>

#include <numeric>

#include "mpi_test_support.h"

using namespace sccl_mpi_test;

namespace {

std::byte patternByte(uint64_t seed, int rank, size_t index) {
  return static_cast<std::byte>(mix(seed, rank, index) >> 56);
}

std::vector<std::byte> pattern(uint64_t seed, int rank, size_t bytes) {
  std::vector<std::byte> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = patternByte(seed, rank, i);
  return out;
}

void checkAllGather(sccl::Transport& transport, size_t bytes_per_rank, bool in_place,
                    uint64_t seed) {
  int n = transport.nranks(), me = transport.rank();
  INFO("allGather " << bytes_per_rank << " bytes per rank" << (in_place ? " in place" : "")
                    << " rank " << me << " of " << n);
  std::vector<std::byte> send = pattern(seed, me, bytes_per_rank);
  std::vector<std::byte> recv(bytes_per_rank * n, std::byte{0});
  const void* source = send.data();
  if (in_place) {
    std::copy(send.begin(), send.end(), recv.begin() + static_cast<long>(me * bytes_per_rank));
    source = recv.data() + me * bytes_per_rank;
  }
  REQUIRE(transport.allGather(source, recv.data(), bytes_per_rank) == scclSuccess);
  std::vector<std::byte> want;
  for (int r = 0; r < n; ++r) {
    std::vector<std::byte> part = pattern(seed, r, bytes_per_rank);
    want.insert(want.end(), part.begin(), part.end());
  }
  CHECK(firstMismatch(recv, want, 1) == -1);
}

// Rank r contributes size_of(r) bytes at offsets in reverse rank order with gaps that must stay
// untouched.
void checkAllGatherV(sccl::Transport& transport, size_t (*size_of)(int), bool in_place,
                     uint64_t seed) {
  int n = transport.nranks(), me = transport.rank();
  std::vector<size_t> sizes(n), offsets(n);
  size_t end = 0;
  for (int r = n - 1; r >= 0; --r) {
    sizes[r] = size_of(r);
    offsets[r] = end + 3;  // a 3-byte gap before each block
    end = offsets[r] + sizes[r];
  }
  INFO("allGatherV rank " << me << " of " << n << (in_place ? " in place" : "") << " my bytes "
                          << sizes[me]);
  const std::byte kUntouched{0xee};
  std::vector<std::byte> recv(end + 3, kUntouched);
  std::vector<std::byte> send = pattern(seed, me, sizes[me]);
  const void* source = send.data();
  if (in_place) {
    std::copy(send.begin(), send.end(), recv.begin() + static_cast<long>(offsets[me]));
    source = recv.data() + offsets[me];
  }
  REQUIRE(transport.allGatherV(source, sizes[me], recv.data(), sizes.data(), offsets.data()) ==
          scclSuccess);
  std::vector<std::byte> want(recv.size(), kUntouched);
  for (int r = 0; r < n; ++r) {
    std::vector<std::byte> part = pattern(seed, r, sizes[r]);
    std::copy(part.begin(), part.end(), want.begin() + static_cast<long>(offsets[r]));
  }
  CHECK(firstMismatch(recv, want, 1) == -1);
}

size_t unevenSize(int r) {
  return static_cast<size_t>(r * 37 + 5);
}
size_t zeroOnOddRanks(int r) {
  return r % 2 == 1 ? 0 : static_cast<size_t>(100 + r);
}
size_t onlyRankZeroEmpty(int r) {
  return r == 0 ? 0 : static_cast<size_t>(1000 * r + 1);
}
size_t allEmpty(int) {
  return 0;
}

void checkBroadcastFromEveryRoot(sccl::Transport& transport, size_t bytes, uint64_t seed) {
  for (int root = 0; root < transport.nranks(); ++root) {
    INFO("broadcast of " << bytes << " bytes from root " << root << " on rank "
                         << transport.rank());
    std::vector<std::byte> buffer = transport.rank() == root
                                        ? pattern(seed, root, bytes)
                                        : std::vector<std::byte>(bytes, std::byte{0});
    REQUIRE(transport.broadcast(buffer.data(), bytes, root) == scclSuccess);
    CHECK(firstMismatch(buffer, pattern(seed, root, bytes), 1) == -1);
  }
}

void runGatherAndBroadcastSuite(sccl::Transport& transport, const std::vector<size_t>& sizes) {
  uint64_t seed = 100;
  for (size_t bytes : sizes) {
    checkAllGather(transport, bytes, false, ++seed);
    checkAllGather(transport, bytes, true, ++seed);
    checkBroadcastFromEveryRoot(transport, bytes, ++seed);
  }
  for (auto size_of : {unevenSize, zeroOnOddRanks, onlyRankZeroEmpty, allEmpty}) {
    checkAllGatherV(transport, size_of, false, ++seed);
    checkAllGatherV(transport, size_of, true, ++seed);
  }
}

}  // namespace

TEST_CASE("mpi gathers and broadcast: exact bytes for every size, root and layout",
          "[mpi][gather][broadcast]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  runGatherAndBroadcastSuite(*transport, {0, 1, 7, 1000, size_t{1} << 20});
}

TEST_CASE("mpi gathers and broadcast: pieces path (100-byte message limit)",
          "[mpi][gather][broadcast][pieces]") {
  auto transport = makeWorldTransport(60000, 100);
  REQUIRE(transport);
  runGatherAndBroadcastSuite(*transport, {1, 99, 100, 101, 1234});
}

TEST_CASE("mpi barrier: completes repeatedly on every rank", "[mpi][barrier]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  for (int i = 0; i < 20; ++i) REQUIRE(transport->barrier() == scclSuccess);
}

TEST_CASE("mpi gathers and broadcast: bad arguments are rejected without breaking",
          "[mpi][gather][broadcast][errors]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  int n = transport->nranks(), me = transport->rank();
  std::vector<std::byte> buffer(64 * n);
  CHECK(transport->broadcast(buffer.data(), 8, n) == scclInvalidArgument);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("root"));
  CHECK(transport->broadcast(buffer.data(), 8, -1) == scclInvalidArgument);
  CHECK(transport->broadcast(nullptr, 8, 0) == scclInvalidArgument);
  CHECK(transport->allGather(nullptr, buffer.data(), 8) == scclInvalidArgument);
  if (n > 1) {
    CHECK(transport->allGather(buffer.data(), buffer.data(), SIZE_MAX / 2 + 1) ==
          scclInvalidArgument);
  }
  std::vector<size_t> sizes(n, 8), offsets(n, 0);
  CHECK(transport->allGatherV(buffer.data(), 9, buffer.data(), sizes.data(), offsets.data()) ==
        scclInvalidArgument);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("recv_bytes"));
  CHECK(transport->allGatherV(buffer.data(), 8, buffer.data(), nullptr, offsets.data()) ==
        scclInvalidArgument);
  offsets[me] = SIZE_MAX;
  CHECK(transport->allGatherV(buffer.data(), 8, buffer.data(), sizes.data(), offsets.data()) ==
        scclInvalidArgument);
  // Still usable.
  std::vector<int> ranks(n, -1);
  REQUIRE(transport->allGather(&me, ranks.data(), sizeof(int)) == scclSuccess);
  std::vector<int> want(n);
  std::iota(want.begin(), want.end(), 0);
  CHECK(ranks == want);
}
