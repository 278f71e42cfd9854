// Creating the MPI transport: over a duplicate of a given MPI communicator (with the rank and
// size cross-check), and from bootstrap-exchanged world ranks with MPI_Comm_create_group, here
// with a stand-in bootstrap over MPI so that any sparsecoll rank order and subsets of the world
// can be tried: reversed ranks, and only the even world ranks.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>

#include "mpi_test_support.h"
#include "transports/bootstrap/bootstrap.h"

using namespace sccl_mpi_test;

namespace {

// The bootstrap interface over an MPI communicator, with sparsecoll ranks that may differ from
// the MPI ranks. Test-only: it blocks in MPI without a deadline.
class MpiStandInBootstrap final : public sccl::Bootstrap {
 public:
  MpiStandInBootstrap(MPI_Comm comm, int sccl_rank) : sccl_rank_(sccl_rank) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_size(comm_, &nranks_);
    mpi_rank_of_sccl_rank_.resize(nranks_);
    std::vector<int> sccl_ranks(nranks_);
    MPI_Allgather(&sccl_rank_, 1, MPI_INT, sccl_ranks.data(), 1, MPI_INT, comm_);
    for (int m = 0; m < nranks_; ++m) mpi_rank_of_sccl_rank_[sccl_ranks[m]] = m;
    token_.fill(0x42);
  }
  ~MpiStandInBootstrap() override { MPI_Comm_free(&comm_); }

  int rank() const override { return sccl_rank_; }
  int nranks() const override { return nranks_; }
  const std::array<uint8_t, 16>& jobToken() const override { return token_; }

  scclResult_t allGather(const void* mine, void* all, size_t bytes) override {
    std::vector<std::byte> by_mpi_rank(bytes * nranks_);
    MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, by_mpi_rank.data(),
                  static_cast<int>(bytes), MPI_BYTE, comm_);
    for (int r = 0; r < nranks_; ++r) {
      std::memcpy(static_cast<std::byte*>(all) + r * bytes,
                  &by_mpi_rank[mpi_rank_of_sccl_rank_[r] * bytes], bytes);
    }
    return scclSuccess;
  }
  scclResult_t barrier() override {
    return MPI_Barrier(comm_) == MPI_SUCCESS ? scclSuccess : scclSystemError;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int sccl_rank_;
  int nranks_ = 0;
  std::vector<int> mpi_rank_of_sccl_rank_;
  std::array<uint8_t, 16> token_{};
};

std::unique_ptr<sccl::Transport> createFromBootstrap(sccl::Bootstrap& bootstrap) {
  sccl::TransportSetup setup;
  setup.rank = bootstrap.rank();
  setup.nranks = bootstrap.nranks();
  setup.timeout_ms = 30000;
  setup.bootstrap = &bootstrap;
  std::unique_ptr<sccl::Transport> transport;
  if (sccl::createMpiTransport(setup, &transport) != scclSuccess) return {};
  return transport;
}

// Every rank learns the world rank behind each sparsecoll rank through the transport itself.
std::vector<int> worldRankOfEachScclRank(sccl::Transport& transport) {
  int mine = worldRank();
  std::vector<int> all(transport.nranks(), -1);
  if (transport.allGather(&mine, all.data(), sizeof(int)) != scclSuccess) return {};
  return all;
}

}  // namespace

TEST_CASE("mpi create: a duplicate of MPI_COMM_WORLD keeps the world's ranks", "[mpi][create]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  CHECK(std::string(transport->name()) == "mpi");
  CHECK(transport->rank() == worldRank());
  CHECK(transport->nranks() == worldSize());
  CHECK_FALSE(transport->capabilities().device_memory);
  std::vector<int> want(worldSize());
  for (int r = 0; r < worldSize(); ++r) want[r] = r;
  CHECK(worldRankOfEachScclRank(*transport) == want);
}

TEST_CASE("mpi create: ranks that disagree with the MPI communicator fail on every rank",
          "[mpi][create][errors]") {
  MPI_Comm world = MPI_COMM_WORLD;
  sccl::TransportSetup setup;
  setup.rank = worldRank();
  setup.nranks = worldSize() + 1;  // every rank claims one rank too many
  setup.timeout_ms = 20000;
  setup.mpi_comm = &world;
  std::unique_ptr<sccl::Transport> transport;
  CHECK(sccl::createMpiTransport(setup, &transport) == scclInvalidUsage);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("MPI communicator has rank"));
  CHECK_FALSE(transport);
  if (worldSize() > 1) {
    // Only rank 0 is wrong; the others learn it from the agreement step.
    setup.nranks = worldSize();
    setup.rank = worldRank() == 0 ? 1 : worldRank();
    CHECK(sccl::createMpiTransport(setup, &transport) == scclInvalidUsage);
    if (worldRank() != 0) CHECK_THAT(sccl::threadLastError(), Catch::Contains("MPI rank 0"));
  }
}

TEST_CASE("mpi create: bad setup values are invalid arguments", "[mpi][create][errors]") {
  MPI_Comm world = MPI_COMM_WORLD;
  sccl::TransportSetup setup;
  setup.rank = worldRank();
  setup.nranks = worldSize();
  setup.mpi_comm = &world;
  std::unique_ptr<sccl::Transport> transport;
  setup.timeout_ms = 0;
  CHECK(sccl::createMpiTransport(setup, &transport) == scclInvalidArgument);
  setup.timeout_ms = 1000;
  sccl::MpiTransportOptions options;
  options.max_message_bytes = 0;
  CHECK(sccl::createMpiTransportWithOptions(setup, options, &transport) == scclInvalidArgument);
  options.max_message_bytes = size_t{INT_MAX} + 1;
  CHECK(sccl::createMpiTransportWithOptions(setup, options, &transport) == scclInvalidArgument);
  MPI_Comm null_comm = MPI_COMM_NULL;
  setup.mpi_comm = &null_comm;
  CHECK(sccl::createMpiTransport(setup, &transport) == scclInvalidArgument);
  CHECK_FALSE(transport);
}

TEST_CASE("mpi create: from the bootstrap, in reversed rank order", "[mpi][create]") {
  int n = worldSize();
  MpiStandInBootstrap bootstrap(MPI_COMM_WORLD, n - 1 - worldRank());
  auto transport = createFromBootstrap(bootstrap);
  REQUIRE(transport);
  CHECK(transport->rank() == n - 1 - worldRank());
  std::vector<int> want(n);
  for (int r = 0; r < n; ++r) want[r] = n - 1 - r;
  CHECK(worldRankOfEachScclRank(*transport) == want);
  // The reduction order is sparsecoll rank order, whatever the world order.
  std::vector<std::byte> data = makeInput(scclFloat32, 9, transport->rank(), 1001, false);
  REQUIRE(transport->allReduce(data.data(), data.data(), 1001, scclFloat32, sccl::ReduceOp::Sum) ==
          scclSuccess);
  CHECK(firstMismatch(data, expectedAllReduce(scclFloat32, false, 9, n, 1001, false), 4) == -1);
}

TEST_CASE("mpi create: from the bootstrap over a subset of the world (even ranks)",
          "[mpi][create]") {
  bool member = worldRank() % 2 == 0;
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : 1, worldRank(), &half);
  if (member) {
    int half_rank = 0;
    MPI_Comm_rank(half, &half_rank);
    MpiStandInBootstrap bootstrap(half, half_rank);
    auto transport = createFromBootstrap(bootstrap);
    REQUIRE(transport);
    std::vector<int> want(transport->nranks());
    for (int r = 0; r < transport->nranks(); ++r) want[r] = 2 * r;
    CHECK(worldRankOfEachScclRank(*transport) == want);
    CHECK(transport->barrier() == scclSuccess);
  }
  MPI_Comm_free(&half);
}
