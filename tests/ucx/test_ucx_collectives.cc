// The UCX transport's collectives and messages on every rank of the launched world: allReduce of
// every dtype and op, bitwise against the rank-order reference (support/collective_reference.h),
// on counts that take both algorithms (gather below 64 KiB, owned chunks above) and counts below
// the rank count; exact bytes of the all-gathers, broadcasts from every root and point-to-point
// messages; bad arguments rejected without breaking the transport.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/error.h"
#include "support/collective_reference.h"
#include "support/reduce_scatter_check.h"
#include "ucx_test_world.h"

using namespace sccl_ucx_test;

namespace {

std::string checkAllReduce(sccl::Transport& transport, scclDataType_t dtype, sccl::ReduceOp op,
                           size_t count, bool in_place, uint64_t seed) {
  bool with_nans = op != sccl::ReduceOp::Sum && sccl::isFloatingType(dtype);
  size_t element = sccl::dataTypeSize(dtype);
  std::vector<std::byte> send =
      sccl_test::makeInput(dtype, seed, transport.rank(), count, with_nans);
  std::vector<std::byte> recv(count * element, std::byte{0x5a});
  scclResult_t result = in_place ? transport.allReduce(send.data(), send.data(), count, dtype, op)
                                 : transport.allReduce(send.data(), recv.data(), count, dtype, op);
  if (result != scclSuccess) return std::string("allReduce returned ") + sccl::resultName(result);
  if (in_place) recv = send;
  std::vector<std::byte> want = sccl_test::expectedReduction(
      dtype, sccl_test::referenceOpOf(op), seed, transport.nranks(), count, with_nans);
  long long bad = sccl_test::firstMismatch(recv, want, element);
  return bad < 0 ? "" : "first wrong element " + std::to_string(bad);
}

std::byte patternByte(int rank, size_t index) {
  return static_cast<std::byte>((rank * 131 + index * 7 + 3) & 0xff);
}

}  // namespace

TEST_CASE("ucx allReduce: every dtype and op is bitwise the rank-order reduction",
          "[ucx][allreduce]") {
  TestTransport t = makeUcxTransport();
  REQUIRE(t);
  const size_t n = static_cast<size_t>(t->nranks());
  uint64_t seed = 1;
  for (scclDataType_t dtype : {scclInt8, scclUint8, scclInt32, scclUint32, scclInt64, scclUint64,
                               scclFloat16, scclFloat32, scclFloat64, scclBfloat16}) {
    for (sccl::ReduceOp op : {sccl::ReduceOp::Sum, sccl::ReduceOp::Max, sccl::ReduceOp::Min}) {
      // 20000 elements are above the gather threshold for every type of 4 bytes or more.
      for (size_t count :
           {size_t(0), size_t(1), n - 1, n + 1, size_t(1000), size_t(20000), size_t(70001)}) {
        for (bool in_place : {false, true}) {
          INFO(sccl::dataTypeName(dtype)
               << " " << sccl::reduceOpName(op) << " count " << count
               << (in_place ? " in place" : "") << " rank " << t->rank() << " of " << n);
          CHECK(checkAllReduce(*t.transport, dtype, op, count, in_place, ++seed) == "");
        }
      }
    }
  }
}

TEST_CASE("ucx gathers and broadcast: exact bytes for every size and root", "[ucx][gather]") {
  TestTransport t = makeUcxTransport();
  REQUIRE(t);
  const int n = t->nranks(), me = t->rank();
  for (size_t bytes : {size_t(0), size_t(1), size_t(13), size_t(4096), size_t(300001)}) {
    for (bool in_place : {false, true}) {
      INFO("allGather " << bytes << " bytes" << (in_place ? " in place" : ""));
      std::vector<std::byte> mine(bytes), all(bytes * size_t(n), std::byte{0});
      for (size_t i = 0; i < bytes; ++i) mine[i] = patternByte(me, i);
      if (in_place) std::copy(mine.begin(), mine.end(), all.begin() + long(bytes) * me);
      const void* send = in_place ? all.data() + bytes * size_t(me) : mine.data();
      REQUIRE(t->allGather(send, all.data(), bytes) == scclSuccess);
      bool exact = true;
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < bytes; ++i)
          exact = exact && all[size_t(r) * bytes + i] == patternByte(r, i);
      CHECK(exact);
    }
  }
  // allGatherV: rank r gives r * 1000 + 3 bytes (rank 1: none), at offsets in reverse rank order
  // with gaps.
  std::vector<size_t> sizes(static_cast<size_t>(n)), offsets(static_cast<size_t>(n));
  size_t total = 0;
  for (int r = n - 1; r >= 0; --r) {
    sizes[size_t(r)] = r == 1 ? 0 : size_t(r) * 1000 + 3;
    offsets[size_t(r)] = total + 5;
    total += sizes[size_t(r)] + 5;
  }
  std::vector<std::byte> mine(sizes[size_t(me)]), all(total, std::byte{0});
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = patternByte(me, i);
  REQUIRE(t->allGatherV(mine.data(), mine.size(), all.data(), sizes.data(), offsets.data()) ==
          scclSuccess);
  bool exact = true;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < sizes[size_t(r)]; ++i)
      exact = exact && all[offsets[size_t(r)] + i] == patternByte(r, i);
  CHECK(exact);

  for (int root = 0; root < n; ++root) {
    for (size_t bytes : {size_t(1), size_t(999), size_t(1) << 20}) {
      INFO("broadcast from " << root << " of " << bytes << " bytes");
      std::vector<std::byte> buffer(bytes, std::byte{0});
      if (me == root)
        for (size_t i = 0; i < bytes; ++i) buffer[i] = patternByte(root, i);
      REQUIRE(t->broadcast(buffer.data(), bytes, root) == scclSuccess);
      bool same = true;
      for (size_t i = 0; i < bytes; ++i) same = same && buffer[i] == patternByte(root, i);
      CHECK(same);
    }
  }
  for (int i = 0; i < 20; ++i) REQUIRE(t->barrier() == scclSuccess);
}

TEST_CASE("ucx send/recv: ring exchange, separate tag streams and self messages", "[ucx][p2p]") {
  TestTransport t = makeUcxTransport();
  REQUIRE(t);
  const int n = t->nranks(), me = t->rank();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  for (size_t bytes : {size_t(0), size_t(1), size_t(8192), size_t(1) << 20}) {
    std::vector<std::byte> out(bytes), in(bytes, std::byte{0});
    for (size_t i = 0; i < bytes; ++i) out[i] = patternByte(me, i);
    // Both send first: a send must not wait for its receive.
    REQUIRE(t->send(out.data(), bytes, right, 7) == scclSuccess);
    REQUIRE(t->recv(in.data(), bytes, left, 7) == scclSuccess);
    bool exact = true;
    for (size_t i = 0; i < bytes; ++i) exact = exact && in[i] == patternByte(left, i);
    CHECK(exact);
  }
  // Tag 2's messages overtake tag 1's; each tag stays in order.
  for (int i = 0; i < 3; ++i) {
    int a = 100 + i, b = 200 + i;
    REQUIRE(t->send(&a, sizeof(a), right, 1) == scclSuccess);
    REQUIRE(t->send(&b, sizeof(b), right, 2) == scclSuccess);
  }
  for (int i = 0; i < 3; ++i) {
    int b = 0;
    REQUIRE(t->recv(&b, sizeof(b), left, 2) == scclSuccess);
    CHECK(b == 200 + i);
  }
  for (int i = 0; i < 3; ++i) {
    int a = 0;
    REQUIRE(t->recv(&a, sizeof(a), left, 1) == scclSuccess);
    CHECK(a == 100 + i);
  }
  uint64_t self = 0x1234, back = 0;
  REQUIRE(t->send(&self, sizeof(self), me, 3) == scclSuccess);
  REQUIRE(t->recv(&back, sizeof(back), me, 3) == scclSuccess);
  CHECK(back == self);
  REQUIRE(t->barrier() == scclSuccess);
}

TEST_CASE("ucx bad arguments are rejected and the transport stays usable", "[ucx][errors]") {
  TestTransport t = makeUcxTransport();
  REQUIRE(t);
  const int n = t->nranks();
  int word = 0;
  CHECK(t->send(&word, 4, n, 0) == scclInvalidArgument);
  CHECK(t->send(&word, 4, 0, -1) == scclInvalidArgument);
  CHECK(t->recv(nullptr, 4, 0, 0) == scclInvalidArgument);
  CHECK(t->broadcast(&word, 4, -1) == scclInvalidArgument);
  CHECK(t->allReduce(&word, &word, 1, scclNumTypes, sccl::ReduceOp::Sum) == scclInvalidArgument);
  CHECK(t->allGather(nullptr, &word, 4) == scclInvalidArgument);
  std::unique_ptr<sccl::Window> window;
  CHECK(t->createWindow(0, &window) == scclInvalidArgument);
  int one = 1, sum = 0;
  REQUIRE(t->allReduce(&one, &sum, 1, scclInt32, sccl::ReduceOp::Sum) == scclSuccess);
  CHECK(sum == n);
}

TEST_CASE("ucx reduceScatter: each rank's block of the rank-order reduction, every dtype and op",
          "[ucx][reduce_scatter]") {
  TestTransport t = makeUcxTransport();
  REQUIRE(t);
  sccl_test::runReduceScatterMatrix(*t.transport, {0, 1, 7, 1000, 70001});
}
