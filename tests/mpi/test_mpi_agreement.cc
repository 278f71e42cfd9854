// Call agreement across processes: every mismatched call of tests/support/agreement_cases.h, and
// the sparse and EventGraD ones, are refused with scclInvalidUsage on every rank, with the same
// message, and the communicator keeps working. Runs over the MPI transport, and over UCX in the
// ucx_mpi_* runs (SCCL_TRANSPORT=ucx picks the transport of scclCommInitMpi; tag [api]).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "mpi_test_support.h"
#include "sparsecoll/sparsecoll.h"
#include "support/agreement_cases.h"

using namespace sccl_mpi_test;

namespace {

// Every rank's message must be the same: compare lengths and a checksum over MPI.
bool sameOnEveryRank(const std::string& message) {
  unsigned long long mine[2] = {message.size(), 1469598103934665603ull};
  for (unsigned char ch : message) mine[1] = (mine[1] ^ ch) * 1099511628211ull;
  unsigned long long low[2], high[2];
  MPI_Allreduce(mine, low, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, high, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return low[0] == high[0] && low[1] == high[1];
}

void runCase(const sccl_test::AgreementCase& c, scclComm_t comm) {
  INFO(c.name << " on rank " << worldRank() << " of " << worldSize());
  std::string message;
  CHECK(sccl_test::runAgreementCase(c, worldRank(), comm, &message) == "");
  CHECK(sameOnEveryRank(message));
}

}  // namespace

TEST_CASE("mpi agreement: mismatched calls are refused on every rank", "[api][agreement]") {
  if (worldSize() < 2) return;
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  for (const sccl_test::AgreementCase& c : sccl_test::denseAgreementCases()) {
    if (worldSize() >= c.min_ranks) runCase(c, comm);
  }

  const size_t count = 2048;
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = "topk";
  config.density = 0.01;
  scclSparsifier_t a = nullptr, b = nullptr;
  REQUIRE(scclSparsifierCreate(&a, comm, count, scclFloat32, &config) == scclSuccess);
  REQUIRE(scclSparsifierCreate(&b, comm, count, scclFloat32, &config) == scclSuccess);
  auto sparse = [&](scclSparsifier_t sp, scclRedOp_t op) {
    std::vector<float> grad(count, 0.25f), out(count, 0.0f);
    return scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, op, sp, comm, nullptr);
  };
  runCase({"sparse sum vs avg",
           2,
           [&](int r, scclComm_t) { return sparse(a, r == 0 ? scclSum : scclAvg); },
           {"reduction is scclSum on rank(s) 0 but scclAvg on rank(s) 1"}},
          comm);
  runCase({"sparsifier A vs B",
           2,
           [&](int r, scclComm_t) { return sparse(r == 0 ? a : b, scclSum); },
           {"object (sparsifier or event communicator)"}},
          comm);
  runCase({"sparse vs dense all-reduce",
           2,
           [&](int r, scclComm_t c) {
             return r == 0 ? sparse(a, scclSum)
                           : sccl_test::allReduceOf(c, 8, scclFloat32, scclSum);
           },
           {"scclSparseAllreduce on rank(s) 0 but scclAllReduce on rank(s) 1"}},
          comm);
  CHECK(sparse(a, scclSum) == scclSuccess);  // the sparsifiers still work
  CHECK(scclSparsifierDestroy(a) == scclSuccess);
  CHECK(scclSparsifierDestroy(b) == scclSuccess);

  const size_t sizes[2] = {6, 10};
  const scclEventConfig_t event_config = SCCL_EVENT_CONFIG_INITIALIZER;
  scclEventComm_t ea = nullptr, eb = nullptr;
  REQUIRE(scclEventCommCreate(&ea, comm, 16, scclFloat32, sizes, 2, nullptr, 0, nullptr,
                              &event_config) == scclSuccess);
  REQUIRE(scclEventCommCreate(&eb, comm, 16, scclFloat32, sizes, 2, nullptr, 0, nullptr,
                              &event_config) == scclSuccess);
  std::vector<float> params(16, 1.0f), average(16, 0.0f);
  runCase({"event step vs model average",
           2,
           [&](int r, scclComm_t) {
             return r == 0 ? scclEventCommStep(ea, params.data(), 16, scclFloat32, nullptr)
                           : scclEventCommAverageModel(ea, params.data(), average.data(), 16,
                                                       scclFloat32, nullptr);
           },
           {"scclEventCommStep on rank(s) 0 but scclEventCommAverageModel on rank(s) 1"}},
          comm);
  runCase({"event communicator A vs B",
           2,
           [&](int r, scclComm_t) {
             return scclEventCommStep(r == 0 ? ea : eb, params.data(), 16, scclFloat32, nullptr);
           },
           {"object (sparsifier or event communicator)"}},
          comm);
  CHECK(scclEventCommDestroy(ea) == scclSuccess);
  CHECK(scclEventCommDestroy(eb) == scclSuccess);
  CHECK(scclCommDestroy(comm) == scclSuccess);
}
