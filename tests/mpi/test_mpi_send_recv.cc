// send/recv of the MPI transport: a ring where every rank sends before it receives (sends are
// buffered, so this cannot deadlock), messages to self, per-tag ordering, zero-byte messages,
// messages cut into pieces, and the size and tag checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "mpi_test_support.h"

using namespace sccl_mpi_test;

namespace {

std::vector<uint32_t> message(uint64_t seed, int from, size_t words) {
  std::vector<uint32_t> out(words);
  for (size_t i = 0; i < words; ++i) out[i] = static_cast<uint32_t>(mix(seed, from, i));
  return out;
}

void checkRing(sccl::Transport& transport, size_t words, uint64_t seed) {
  int n = transport.nranks(), me = transport.rank();
  int right = (me + 1) % n, left = (me + n - 1) % n;
  INFO("ring of " << words << " words, rank " << me << " of " << n);
  std::vector<uint32_t> out = message(seed, me, words);
  REQUIRE(transport.send(out.data(), words * 4, right, 5) == scclSuccess);
  std::fill(out.begin(), out.end(), 0u);  // the send copied it: reuse is allowed at once
  std::vector<uint32_t> in(words, 0);
  REQUIRE(transport.recv(in.data(), words * 4, left, 5) == scclSuccess);
  std::vector<uint32_t> want = message(seed, left, words);
  CHECK(std::equal(in.begin(), in.end(), want.begin(), want.end()));  // no 4 MiB expansion
}

}  // namespace

TEST_CASE("mpi send/recv: ring exchange of every size", "[mpi][p2p]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  uint64_t seed = 500;
  for (size_t words : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
    checkRing(*transport, words, ++seed);
  }
}

TEST_CASE("mpi send/recv: pieces path (16-byte message limit)", "[mpi][p2p][pieces]") {
  auto transport = makeWorldTransport(60000, 16);
  REQUIRE(transport);
  uint64_t seed = 600;
  for (size_t words : {size_t{0}, size_t{3}, size_t{4}, size_t{5}, size_t{999}}) {
    checkRing(*transport, words, ++seed);
  }
}

TEST_CASE("mpi send/recv: tags are separate streams, each in order", "[mpi][p2p]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  int n = transport->nranks(), me = transport->rank();
  int right = (me + 1) % n, left = (me + n - 1) % n;
  // Three messages on tag 0 and three on the largest tag, received in the other tag order first.
  int top = static_cast<sccl::MpiTransport&>(*transport).maxUserTag();
  for (int i = 0; i < 3; ++i) {
    int low = me * 10 + i, high = me * 10 + i + 100;
    REQUIRE(transport->send(&low, sizeof(int), right, 0) == scclSuccess);
    REQUIRE(transport->send(&high, sizeof(int), right, top) == scclSuccess);
  }
  for (int tag : {top, 0}) {
    for (int i = 0; i < 3; ++i) {
      int got = -1;
      REQUIRE(transport->recv(&got, sizeof(int), left, tag) == scclSuccess);
      CHECK(got == left * 10 + i + (tag == top ? 100 : 0));
    }
  }
}

TEST_CASE("mpi send/recv: a rank can message itself", "[mpi][p2p]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  std::vector<uint32_t> out = message(7, transport->rank(), 300), in(300, 0);
  REQUIRE(transport->send(out.data(), 1200, transport->rank(), 3) == scclSuccess);
  REQUIRE(transport->recv(in.data(), 1200, transport->rank(), 3) == scclSuccess);
  CHECK(in == out);
}

TEST_CASE("mpi send/recv: bad peers, tags and buffers are invalid arguments",
          "[mpi][p2p][errors]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  int n = transport->nranks(), me = transport->rank();
  int word = 1;
  CHECK(transport->send(&word, 4, n, 0) == scclInvalidArgument);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("peer"));
  CHECK(transport->recv(&word, 4, -1, 0) == scclInvalidArgument);
  CHECK(transport->send(&word, 4, me, -1) == scclInvalidArgument);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("tag"));
  int top = static_cast<sccl::MpiTransport&>(*transport).maxUserTag();
  CHECK(transport->send(&word, 4, me, top + 1) == scclInvalidArgument);
  CHECK(transport->send(nullptr, 4, me, 0) == scclInvalidArgument);
  REQUIRE(transport->barrier() == scclSuccess);
}

TEST_CASE("mpi send/recv: a longer send than the receive breaks the transport on every rank",
          "[mpi][p2p][errors]") {
  auto transport = makeWorldTransport(20000);
  REQUIRE(transport);
  int n = transport->nranks(), me = transport->rank();
  const int culprit = n - 1;  // the only rank that misuses the transport
  if (me == culprit) {
    std::vector<int> big(8, 1);
    REQUIRE(transport->send(big.data(), 32, me, 9) == scclSuccess);
    int small[4];
    CHECK(transport->recv(small, 16, me, 9) == scclInvalidUsage);
    CHECK_THAT(sccl::threadLastError(), Catch::Contains("different sizes"));
    // Broken now: every operation fails fast with the same code.
    CHECK(transport->barrier() == scclInvalidUsage);
    CHECK_THAT(sccl::threadLastError(), Catch::Contains("earlier failure"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me != culprit) {
    // The culprit's failure notice reached every peer: their next operation fails at once.
    CHECK(transport->barrier() == scclRemoteError);
    CHECK_THAT(sccl::threadLastError(),
               Catch::Contains("rank " + std::to_string(culprit) + " failed (invalid usage)"));
  }
}
