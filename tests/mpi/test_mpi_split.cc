// scclCommSplit across processes, on the transport scclCommInitMpi picks (mpi; ucx where the UCX
// suite runs this file with SCCL_TRANSPORT=ucx): concurrent creations in disjoint groups (each
// its own MPI_Comm_create_group or UCX endpoints), a child of one process on "local", NOCOLOR,
// a split of a split, the refusals every rank shares, and a child that outlives its parent.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_support.h"
#include "sparsecoll/sparsecoll.h"

using namespace sccl_mpi_test;

namespace {

std::string parentTransport(scclComm_t comm) {
  const char* name = nullptr;
  scclCommTransportName(comm, &name);
  return name != nullptr ? name : "";
}

// The child's shape and order: `members` are the world ranks in the child's rank order. A child
// of one process runs on "local", any other on the parent's transport.
void checkChild(scclComm_t child, const std::vector<int>& members, const std::string& transport) {
  const int me =
      static_cast<int>(std::find(members.begin(), members.end(), worldRank()) - members.begin());
  const int nranks = static_cast<int>(members.size());
  int count = -1, rank = -1;
  REQUIRE(scclCommCount(child, &count) == scclSuccess);
  REQUIRE(scclCommUserRank(child, &rank) == scclSuccess);
  CHECK(count == nranks);
  CHECK(rank == me);
  CHECK(parentTransport(child) == (nranks == 1 ? std::string("local") : transport));
  std::vector<int32_t> order(members.size(), -1);
  const int32_t mine = worldRank();
  REQUIRE(scclAllGather(&mine, order.data(), 1, scclInt32, child, nullptr) == scclSuccess);
  CHECK(std::equal(order.begin(), order.end(), members.begin()));
  const size_t count_elements = 4099;
  std::vector<std::byte> data = makeInput(scclFloat32, 31, me, count_elements, false);
  REQUIRE(scclAllReduce(data.data(), data.data(), count_elements, scclFloat32, scclSum, child,
                        nullptr) == scclSuccess);
  CHECK(firstMismatch(data,
                      expectedAllReduce(scclFloat32, false, 31, nranks, count_elements, false),
                      4) == -1);
}

// World ranks with my color in (key, world rank) order.
template <typename Color, typename Key>
std::vector<int> membersOf(Color color, Key key) {
  std::vector<int> members;
  for (int r = 0; r < worldSize(); ++r) {
    if (color(r) == color(worldRank())) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return key(a) < key(b); });
  return members;
}

void checkParentWorks(scclComm_t comm) {
  float one = 1.0f, sum = 0.0f;
  REQUIRE(scclAllReduce(&one, &sum, 1, scclFloat32, scclSum, comm, nullptr) == scclSuccess);
  CHECK(sum == float(worldSize()));
}

}  // namespace

TEST_CASE("mpi api: scclCommSplit by parity with reversed keys, the child outliving its parent",
          "[mpi][api][comm_split]") {
  scclComm_t parent = nullptr;
  REQUIRE(scclCommInitMpi(&parent, nullptr, nullptr) == scclSuccess);
  const std::string transport = parentTransport(parent);
  auto color = [](int r) { return r % 2; };
  auto key = [](int r) { return -r; };
  scclComm_t child = nullptr;
  REQUIRE(scclCommSplit(parent, color(worldRank()), key(worldRank()), &child, nullptr) ==
          scclSuccess);
  REQUIRE(child != nullptr);
  const std::vector<int> members = membersOf(color, key);
  checkChild(child, members, transport);
  checkParentWorks(parent);
  CHECK(scclCommDestroy(parent) == scclSuccess);
  checkChild(child, members, transport);  // its own rendezvous and transport
  CHECK(scclCommDestroy(child) == scclSuccess);
}

TEST_CASE("mpi api: scclCommSplit with NOCOLOR, and a split of a split", "[mpi][api][comm_split]") {
  scclComm_t parent = nullptr;
  REQUIRE(scclCommInitMpi(&parent, nullptr, nullptr) == scclSuccess);
  const std::string transport = parentTransport(parent);
  // World rank 1 takes no part (where there is one).
  auto color = [](int r) { return r == 1 ? SCCL_SPLIT_NOCOLOR : 5; };
  auto key = [](int r) { return r; };
  scclComm_t child = reinterpret_cast<scclComm_t>(uintptr_t{0x5eed});
  REQUIRE(scclCommSplit(parent, color(worldRank()), key(worldRank()), &child, nullptr) ==
          scclSuccess);
  if (worldRank() == 1) {
    CHECK(child == nullptr);
  } else {
    const std::vector<int> members = membersOf(color, key);
    checkChild(child, members, transport);
    // Each member alone: one process, so "local" whatever the parent runs.
    scclComm_t single = nullptr;
    int child_rank = -1;
    scclCommUserRank(child, &child_rank);
    REQUIRE(scclCommSplit(child, child_rank, 0, &single, nullptr) == scclSuccess);
    checkChild(single, {worldRank()}, transport);
    CHECK(scclCommDestroy(single) == scclSuccess);
    CHECK(scclCommDestroy(child) == scclSuccess);
  }
  checkParentWorks(parent);
  CHECK(scclCommDestroy(parent) == scclSuccess);
}

TEST_CASE("mpi api: scclCommSplit refusals reach every rank and leave the parent usable",
          "[mpi][api][comm_split]") {
  scclComm_t parent = nullptr;
  REQUIRE(scclCommInitMpi(&parent, nullptr, nullptr) == scclSuccess);
  const int last = worldSize() - 1;
  scclComm_t child = nullptr;
  if (worldSize() >= 2) {
    // The last rank enters a barrier while the others split.
    const scclResult_t got =
        worldRank() == last ? scclBarrier(parent) : scclCommSplit(parent, 0, 0, &child, nullptr);
    CHECK(got == scclInvalidUsage);
    CHECK(child == nullptr);
    checkParentWorks(parent);
  }
  // The last rank passes a color that is no color.
  const scclResult_t got = scclCommSplit(parent, worldRank() == last ? -7 : 0, 0, &child, nullptr);
  CHECK(got == (worldRank() == last ? scclInvalidArgument : scclInvalidUsage));
  const std::string message = scclGetLastError(parent);
  CHECK(message.find(worldRank() == last ? "color -7" : "rank " + std::to_string(last)) !=
        std::string::npos);
  CHECK(child == nullptr);
  checkParentWorks(parent);
  CHECK(scclCommDestroy(parent) == scclSuccess);
}
