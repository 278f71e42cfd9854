// The public C API over MPI on every rank of the job: scclCommInitMpi (world and a split
// communicator), scclCommInitRank with transport "mpi" and an id broadcast by MPI, the dense
// collectives with exact results, and bad inputs that must fail with scclInvalidArgument and a
// message while the communicator keeps working.
#include <catch2/catch.hpp>

#include <cstring>
#include <cstdlib>
#include <string>

#include "mpi_test_support.h"
#include "sparsecoll/sparsecoll.h"

using namespace sccl_mpi_test;

namespace {

// An allReduce of float inputs derived from (seed, rank, index), checked bitwise.
void checkAllReduce(scclComm_t comm, int rank, int nranks, size_t count, uint64_t seed) {
  std::vector<std::byte> data = makeInput(scclFloat32, seed, rank, count, false);
  REQUIRE(scclAllReduce(data.data(), data.data(), count, scclFloat32, scclSum, comm, nullptr) ==
          scclSuccess);
  CHECK(firstMismatch(data, expectedAllReduce(scclFloat32, false, seed, nranks, count, false), 4) ==
        -1);
}

void checkCollectives(scclComm_t comm, int rank, int nranks) {
  checkAllReduce(comm, rank, nranks, 12345, 21);
  std::vector<int64_t> gathered(nranks, -1);
  int64_t mine = 1000 + rank;
  REQUIRE(scclAllGather(&mine, gathered.data(), 1, scclInt64, comm, nullptr) == scclSuccess);
  for (int r = 0; r < nranks; ++r) CHECK(gathered[r] == 1000 + r);
  for (int root = 0; root < nranks; ++root) {
    double send[3] = {root + 0.5, -1.0, 2.0 * root}, recv[3] = {0, 0, 0};
    REQUIRE(scclBroadcast(send, recv, 3, scclFloat64, root, comm, nullptr) == scclSuccess);
    CHECK(recv[0] == root + 0.5);
    CHECK(recv[2] == 2.0 * root);
  }
  CHECK(scclBarrier(comm) == scclSuccess);
}

// The transport scclCommInitMpi picks: SCCL_TRANSPORT when set (the UCX tests run this suite with
// "ucx"), else "mpi".
std::string initMpiTransport() {
  const char* chosen = std::getenv("SCCL_TRANSPORT");
  return chosen != nullptr && *chosen != '\0' ? chosen : "mpi";
}

void checkIdentity(scclComm_t comm, int rank, int nranks, const std::string& transport) {
  int count = -1, user_rank = -1;
  const char* name = nullptr;
  REQUIRE(scclCommCount(comm, &count) == scclSuccess);
  REQUIRE(scclCommUserRank(comm, &user_rank) == scclSuccess);
  REQUIRE(scclCommTransportName(comm, &name) == scclSuccess);
  CHECK(count == nranks);
  CHECK(user_rank == rank);
  CHECK(std::string(name) == transport);
}

}  // namespace

TEST_CASE("mpi api: scclCommInitMpi over MPI_COMM_WORLD", "[mpi][api]") {
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  checkIdentity(comm, worldRank(), worldSize(), initMpiTransport());
  checkCollectives(comm, worldRank(), worldSize());
  scclResult_t async_error = scclInternalError;
  CHECK(scclCommGetAsyncError(comm, &async_error) == scclSuccess);
  CHECK(async_error == scclSuccess);
  CHECK(scclCommDestroy(comm) == scclSuccess);
}

TEST_CASE("mpi api: scclCommInitMpi over a split communicator", "[mpi][api]") {
  // Two halves by parity, ranks reversed inside each.
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, worldRank() % 2, -worldRank(), &half);
  int half_rank = 0, half_size = 0;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.commName = "half";
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, &half, &config) == scclSuccess);
  checkIdentity(comm, half_rank, half_size, initMpiTransport());
  checkCollectives(comm, half_rank, half_size);
  CHECK(scclCommDestroy(comm) == scclSuccess);
  MPI_Comm_free(&half);
}

TEST_CASE("mpi api: scclCommInitRankConfig with transport mpi", "[mpi][api]") {
  scclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  int created = 1;
  if (worldRank() == 0) created = scclGetUniqueId(&id) == scclSuccess;
  MPI_Bcast(&created, 1, MPI_INT, 0, MPI_COMM_WORLD);
  REQUIRE(created == 1);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.transport = "mpi";
  config.timeoutMs = 20000;
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitRankConfig(&comm, worldSize(), id, worldRank(), &config) == scclSuccess);
  checkIdentity(comm, worldRank(), worldSize(), "mpi");
  checkCollectives(comm, worldRank(), worldSize());
  CHECK(scclCommDestroy(comm) == scclSuccess);
}

TEST_CASE("mpi api: bad inputs fail with a message and leave the communicator working",
          "[mpi][api][errors]") {
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  float value = 1.0f, out = 0.0f;
  CHECK(scclAllReduce(&value, &out, 1, scclFloat32, scclSum, nullptr, nullptr) ==
        scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("NULL") != std::string::npos);
  CHECK(scclAllReduce(nullptr, &out, 1, scclFloat32, scclSum, comm, nullptr) ==
        scclInvalidArgument);
  CHECK(std::string(scclGetLastError(comm)).find("sendbuf") != std::string::npos);
  CHECK(scclAllReduce(&value, &out, 1, scclNumTypes, scclSum, comm, nullptr) ==
        scclInvalidArgument);
  CHECK(std::string(scclGetLastError(comm)).find("data type") != std::string::npos);
  CHECK(scclAllGather(&value, nullptr, 1, scclFloat32, comm, nullptr) == scclInvalidArgument);
  CHECK(scclBroadcast(&value, &out, 1, scclFloat32, worldSize(), comm, nullptr) ==
        scclInvalidArgument);
  CHECK(std::string(scclGetLastError(comm)).find("root") != std::string::npos);
  CHECK(scclBroadcast(&value, &out, 1, scclFloat32, -1, comm, nullptr) == scclInvalidArgument);
  CHECK(scclBarrier(nullptr) == scclInvalidArgument);
  scclResult_t async_error = scclInternalError;
  REQUIRE(scclCommGetAsyncError(comm, &async_error) == scclSuccess);
  CHECK(async_error == scclSuccess);
  checkCollectives(comm, worldRank(), worldSize());
  CHECK(scclCommDestroy(comm) == scclSuccess);
}

TEST_CASE("mpi api: scclCommInitMpi rejects a null output and MPI_COMM_NULL",
          "[mpi][api][errors]") {
  CHECK(scclCommInitMpi(nullptr, nullptr, nullptr) == scclInvalidArgument);
  MPI_Comm null_comm = MPI_COMM_NULL;
  scclComm_t comm = nullptr;
  CHECK(scclCommInitMpi(&comm, &null_comm, nullptr) == scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("MPI_COMM_NULL") != std::string::npos);
  CHECK(comm == nullptr);
}

TEST_CASE("mpi api: a timeout breaks the communicator on every rank; abort frees it",
          "[mpi][api][failures]") {
  if (worldSize() < 2) return;
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = 500;
  config.commName = "timeout-test";
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, &config) == scclSuccess);
  scclResult_t first = scclSuccess;
  if (worldRank() != 0) {
    first = scclBarrier(comm);  // rank 0 never joins
    CHECK((first == scclTimeout || first == scclRemoteError));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (worldRank() == 0) {
    first = scclBarrier(comm);  // too late: its peers gave up
    CHECK(first == scclRemoteError);
  }
  scclResult_t async_error = scclSuccess;
  REQUIRE(scclCommGetAsyncError(comm, &async_error) == scclSuccess);
  CHECK(async_error == first);
  float value = 1.0f;
  CHECK(scclAllReduce(&value, &value, 1, scclFloat32, scclSum, comm, nullptr) == first);
  CHECK(std::string(scclGetLastError(comm)).size() > 0);
  CHECK(scclCommAbort(comm) == scclSuccess);
  MPI_Barrier(MPI_COMM_WORLD);
}
