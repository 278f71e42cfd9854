// The transport scclCommInitRank picks when none is named (comm/default_transport.h): every branch
// of the decision from synthetic rank descriptions, and the in-process end to end (threads of this
// process get "local"). The multi-process end to end is the CTest pair init_rank_default_*.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_compatibility.h"
#include "comm/default_transport.h"
#include "core/error.h"
#include "sparsecoll/sparsecoll.h"

using sccl::RankDescription;

namespace {

RankDescription rankIn(int rank, uint64_t process, const char* host, uint32_t features,
                       bool mpi_initialised) {
  RankDescription d{};
  d.rank = rank;
  d.process_nonce = process;
  d.build_features = features;
  d.process_flags = mpi_initialised ? sccl::kProcessMpiInitialised : 0u;
  std::strncpy(d.host, host, sizeof(d.host) - 1);
  std::strncpy(d.transport, sccl::kAutoTransport, sizeof(d.transport) - 1);
  return d;
}

std::string choose(const std::vector<RankDescription>& ranks, scclResult_t* result) {
  sccl::TransportChoice choice;
  *result = sccl::chooseDefaultTransport(ranks, &choice);
  return *result == scclSuccess ? choice.name : sccl::threadLastError();
}

}  // namespace

TEST_CASE("default transport: threads of one process run on local, whatever is built",
          "[comm][default_transport]") {
  const uint32_t everything = sccl::kFeatureMpi | sccl::kFeatureUcx;
  std::vector<RankDescription> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(rankIn(r, 7, "node0", everything, r == 0));
  scclResult_t result;
  CHECK(choose(ranks, &result) == "local");
  CHECK(result == scclSuccess);
}

TEST_CASE("default transport: several processes run on ucx when it is built",
          "[comm][default_transport]") {
  scclResult_t result;
  std::vector<RankDescription> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(rankIn(r, 100 + r, r < 2 ? "node0" : "node1",
                           sccl::kFeatureMpi | sccl::kFeatureUcx, true));
  }
  CHECK(choose(ranks, &result) == "ucx");
  // Two processes of two threads each: still ucx (mpi needs one rank per process).
  for (int r = 0; r < 4; ++r) ranks[r].process_nonce = 100 + r / 2;
  CHECK(choose(ranks, &result) == "ucx");
}

TEST_CASE("default transport: without UCX, mpi when every process initialised MPI",
          "[comm][default_transport]") {
  scclResult_t result;
  std::vector<RankDescription> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(rankIn(r, 100 + r, "node0", sccl::kFeatureMpi, true));
  CHECK(choose(ranks, &result) == "mpi");

  SECTION("one process without MPI: an error naming it") {
    ranks[2].process_flags = 0;
    const std::string message = choose(ranks, &result);
    CHECK(result == scclInvalidUsage);
    CHECK(message.find("rank 2") != std::string::npos);
    CHECK(message.find("MPI_Init") != std::string::npos);
    CHECK(message.find("SCCL_TRANSPORT") != std::string::npos);
  }
  SECTION("two ranks in one MPI process: an error, the mpi transport maps one rank per process") {
    ranks[2].process_nonce = ranks[1].process_nonce;
    const std::string message = choose(ranks, &result);
    CHECK(result == scclInvalidUsage);
    CHECK(message.find("one rank per process") != std::string::npos);
  }
}

TEST_CASE("default transport: a host-only build across processes says what is missing",
          "[comm][default_transport]") {
  scclResult_t result;
  std::vector<RankDescription> ranks = {rankIn(0, 1, "a", 0, false), rankIn(1, 2, "b", 0, false)};
  const std::string message = choose(ranks, &result);
  CHECK(result == scclInvalidUsage);
  CHECK(message.find("2 ranks in 2 processes on 2 hosts") != std::string::npos);
  CHECK(message.find("neither UCX nor MPI") != std::string::npos);
}

TEST_CASE("default transport: scclCommInitRank with no config on threads of one process",
          "[comm][default_transport]") {
  scclUniqueId id;
  REQUIRE(scclGetUniqueId(&id) == scclSuccess);
  constexpr int kRanks = 3;
  std::vector<scclComm_t> comms(kRanks, nullptr);
  std::vector<scclResult_t> results(kRanks, scclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] { results[r] = scclCommInitRank(&comms[r], kRanks, id, r); });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    REQUIRE(results[r] == scclSuccess);
    const char* name = nullptr;
    REQUIRE(scclCommTransportName(comms[r], &name) == scclSuccess);
    CHECK(std::string(name) == "local");
    CHECK(scclCommDestroy(comms[r]) == scclSuccess);
  }
}
