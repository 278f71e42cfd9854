// "hierarchy": "node" on in-process ranks grouped into nodes by SCCL_RANKS_PER_NODE=2 (the CTest
// node_hierarchy_local sets it; the tag is hidden because the setting is read once per process).
// Checked bitwise against a reference the test builds from independent pieces: the node sums
// computed here, and the flat preset run on them by separate 2-rank communicators, one per chunk
// (what the hierarchy must equal by construction); plus identical bits on every rank, a mismatch
// of node sizes refused on every rank, and the statistics' split of the bytes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/call_header.h"
#include "sparsifier/sparsifier.h"
#include "support/fault_transport.h"
#include "support/local_ranks.h"
#include "support/node_hierarchy_inputs.h"

using sccl_test::configOf;
using sccl_test::RankLog;
using sccl_test::requireNodesOfTwo;
using sccl_test::runLocalRanks;

namespace {

constexpr int kPerNode = sccl_test::kRanksPerNode;

float gradient(int rank, int call, size_t i) {
  return sccl_test::nodeTestGradient(rank, call, i);
}

// Every rank's output of `calls` calls of `config` on `nranks` ranks, gradients from gradient().
std::vector<std::vector<std::vector<float>>> run(int nranks, size_t count,
                                                 const scclSparseConfig_t& config, int calls,
                                                 std::vector<scclSparseStats_t>* stats = nullptr) {
  std::vector<std::vector<std::vector<float>>> out(static_cast<size_t>(nranks));
  for (auto& calls_of_rank : out) calls_of_rank.resize(size_t(calls));
  if (stats != nullptr) stats->assign(size_t(nranks), scclSparseStats_t{});
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    std::vector<float> send(count);
    for (int t = 0; t < calls; ++t) {
      for (size_t i = 0; i < count; ++i) send[i] = gradient(rank, t, i);
      std::vector<float>& recv = out[size_t(rank)][size_t(t)];
      recv.assign(count, -7.0f);
      log.checkResult(scclSparseAllreduce(send.data(), recv.data(), count, scclFloat32, scclSum, sp,
                                          comm, nullptr),
                      scclSuccess, "call " + std::to_string(t));
    }
    if (stats != nullptr) {
      scclSparseStats_t& s = (*stats)[size_t(rank)];
      s.size = sizeof(s);
      log.checkResult(scclSparsifierGetStats(sp, &s), scclSuccess, "stats");
    }
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  return out;
}

// The reference: node j's sum of chunk l (its two ranks in rank order, as the reduce-scatter
// adds them), reduced across the nodes by the flat preset on a 2-rank communicator per chunk.
std::vector<std::vector<float>> reference(int nodes, size_t count, const char* flat_json,
                                          int calls) {
  const size_t chunk = (count + kPerNode - 1) / kPerNode;
  std::vector<std::vector<float>> expected(static_cast<size_t>(calls), std::vector<float>(count));
  const scclSparseConfig_t config = configOf(flat_json);
  for (int l = 0; l < kPerNode; ++l) {
    const size_t begin = std::min(count, size_t(l) * chunk);
    const size_t length = std::min(chunk, count - begin);
    if (length == 0) continue;
    std::mutex mutex;
    auto failures = runLocalRanks(nodes, [&](int node, scclComm_t comm, RankLog& log) {
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, length, scclFloat32, &config),
                           scclSuccess, "reference create"))
        return;
      std::vector<float> sum(length), recv(length);
      for (int t = 0; t < calls; ++t) {
        for (size_t i = 0; i < length; ++i) {
          const int first = node * kPerNode;
          sum[i] = gradient(first, t, begin + i) + gradient(first + 1, t, begin + i);
        }
        log.checkResult(scclSparseAllreduce(sum.data(), recv.data(), length, scclFloat32, scclSum,
                                            sp, comm, nullptr),
                        scclSuccess, "reference call");
        if (node == 0) {
          std::lock_guard<std::mutex> lock(mutex);
          std::copy(recv.begin(), recv.end(), expected[size_t(t)].begin() + std::ptrdiff_t(begin));
        }
      }
      scclSparsifierDestroy(sp);
    });
    REQUIRE_NO_RANK_FAILURES(failures);
  }
  return expected;
}

}  // namespace

TEST_CASE("hierarchy node: bitwise the flat preset across nodes of the node sums", "[.hierarchy]") {
  requireNodesOfTwo();
  struct Case {
    const char* preset;
    int nodes;
    size_t count;
  };
  for (const Case& c : {Case{"micro", 2, 10000}, Case{"exdyna", 2, 10001}, Case{"micro", 3, 777},
                        Case{"topk", 2, 5000}, Case{"dense", 2, 999}}) {
    DYNAMIC_SECTION(c.preset << " " << c.nodes << " nodes x " << kPerNode << ", count "
                             << c.count) {
      const std::string base =
          std::string(R"({"algorithm": ")") + c.preset + R"(", "density": 0.01)";
      const int calls = 6;
      const auto got = run(c.nodes * kPerNode, c.count,
                           configOf((base + R"(, "hierarchy": "node"})").c_str()), calls);
      const auto want = reference(c.nodes, c.count, (base + "}").c_str(), calls);
      for (int t = 0; t < calls; ++t) {
        INFO("call " << t);
        for (int r = 0; r < c.nodes * kPerNode; ++r) {
          INFO("rank " << r);
          REQUIRE(std::memcmp(got[size_t(r)][size_t(t)].data(), want[size_t(t)].data(),
                              c.count * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("hierarchy node: the same bits on every run, bytes split at the node boundary",
          "[.hierarchy]") {
  requireNodesOfTwo();
  const size_t count = 20000;
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})");
  std::vector<scclSparseStats_t> stats;
  const auto first = run(4, count, hier, 5, &stats);
  const auto second = run(4, count, hier, 5);
  CHECK(first == second);
  for (const scclSparseStats_t& s : stats) {
    // Inside the node: the reduce-scatter and the all-gather of one 10000-element block each.
    CHECK(s.bytesSentInsideNode == 2 * 10000 * sizeof(float));
    CHECK(s.totalBytesSentInsideNode == 5 * s.bytesSentInsideNode);
    CHECK(s.bytesSent > 0);
    CHECK(s.kTarget == 2 * 100);  // k = 1 % of each 10000-element chunk, two chunks a node
    CHECK(s.iteration == 5);
  }
  std::vector<scclSparseStats_t> flat_stats;
  run(4, count, configOf(R"({"algorithm": "micro", "density": 0.01})"), 5, &flat_stats);
  uint64_t across_hier = 0, across_flat = 0;
  for (int r = 0; r < 4; ++r) {
    across_hier += stats[size_t(r)].bytesSent;
    across_flat += flat_stats[size_t(r)].bytesSent;
  }
  INFO("bytes sent by all ranks in the last call: hierarchy " << across_hier << ", flat "
                                                              << across_flat);
  CHECK(across_hier < across_flat);
}

TEST_CASE("hierarchy node: nodes of different sizes are refused on every rank", "[.hierarchy]") {
  requireNodesOfTwo();
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})");
  auto failures = runLocalRanks(3, [&](int, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &hier), scclInvalidUsage,
                    "3 ranks in nodes of 2");
    log.check(std::string(scclGetLastError(comm)).find("2, 1") != std::string::npos,
              std::string("the message lists the node sizes: ") + scclGetLastError(comm));
    // The communicator stays usable.
    float x = 1.0f;
    log.checkResult(scclAllReduce(&x, &x, 1, scclFloat32, scclSum, comm, nullptr), scclSuccess,
                    "allreduce after the refusal");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("hierarchy node: a hostile peer across nodes fails every rank, recvbuf untouched",
          "[.hierarchy]") {
  requireNodesOfTwo();
  const size_t count = 4000;
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})");
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &hier), scclSuccess,
                         "create"))
      return;
    std::vector<float> send(count), recv(count, 0.0f);
    for (size_t i = 0; i < count; ++i) send[i] = gradient(rank, 0, i);
    log.checkResult(scclSparseAllreduce(send.data(), recv.data(), count, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "a clean call first");
    // Local rank 0 of each node exchanges chunk 0 across nodes; its peer on node 1 claims far
    // more entries than its partition holds in the next call's header.
    if (sp->hierarchy->local_rank == 0) {
      sccl_test::Fault fault;
      fault.op = sccl_test::FaultOp::AllGather;
      fault.hostile_rank = 1;
      fault.mutate = [](std::byte* data, size_t bytes) {
        if (bytes < sizeof(sccl::CallHeader)) return;
        const uint64_t claimed = uint64_t(1) << 40;
        std::memcpy(data + offsetof(sccl::CallHeader, k_local), &claimed, sizeof(claimed));
      };
      sccl_test::installFault(sp->hierarchy->inter, fault);
    }
    std::vector<float> untouched(count, -3.0f);
    const scclResult_t result = scclSparseAllreduce(send.data(), untouched.data(), count,
                                                    scclFloat32, scclSum, sp, comm, nullptr);
    log.checkResult(result, scclRemoteError, "the call with a hostile peer");
    log.check(std::string(scclGetLastError(comm)).find("hierarchy node") != std::string::npos,
              std::string("the message says where: ") + scclGetLastError(comm));
    bool intact = true;
    for (float x : untouched) intact = intact && x == -3.0f;
    log.check(intact, "nothing written to recvbuf");
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("hierarchy node: sparsifiers of one communicator share its node split", "[.hierarchy]") {
  requireNodesOfTwo();
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})");
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t a = nullptr, b = nullptr;
    log.checkResult(scclSparsifierCreate(&a, comm, 3000, scclFloat32, &hier), scclSuccess, "a");
    log.checkResult(scclSparsifierCreate(&b, comm, 5001, scclFloat32, &hier), scclSuccess, "b");
    if (a == nullptr || b == nullptr) return;
    log.check(
        a->hierarchy->intra == b->hierarchy->intra && a->hierarchy->inter == b->hierarchy->inter,
        "one intra and one inter communicator for both sparsifiers");
    std::vector<float> send(5001), recv(5001);
    for (int t = 0; t < 3; ++t) {  // interleaved calls on the shared communicators
      for (size_t i = 0; i < send.size(); ++i) send[i] = gradient(rank, t, i);
      log.checkResult(scclSparseAllreduce(send.data(), recv.data(), 3000, scclFloat32, scclSum, a,
                                          comm, nullptr),
                      scclSuccess, "a's call");
      log.checkResult(scclSparseAllreduce(send.data(), recv.data(), 5001, scclFloat32, scclSum, b,
                                          comm, nullptr),
                      scclSuccess, "b's call");
    }
    scclSparsifierDestroy(a);
    scclSparsifierDestroy(b);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("hierarchy node: non-finite values follow the policy on every rank", "[.hierarchy]") {
  requireNodesOfTwo();
  for (const char* policy : {"propagate", "error"}) {
    DYNAMIC_SECTION("policy " << policy) {
      const scclSparseConfig_t hier = configOf((std::string(R"({"algorithm": "micro", )") +
                                                R"("density": 0.01, "hierarchy": "node", )" +
                                                R"("non_finite": ")" + policy + "\"}")
                                                   .c_str());
      const bool error = std::string(policy) == "error";
      auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
        scclSparsifier_t sp = nullptr;
        if (!log.checkResult(scclSparsifierCreate(&sp, comm, 2000, scclFloat32, &hier), scclSuccess,
                             "create"))
          return;
        std::vector<float> send(2000), recv(2000, 5.0f);
        for (size_t i = 0; i < send.size(); ++i) send[i] = gradient(rank, 0, i);
        if (rank == 3) send[1999] = std::numeric_limits<float>::quiet_NaN();  // node 1, chunk 1
        const scclResult_t result = scclSparseAllreduce(send.data(), recv.data(), 2000, scclFloat32,
                                                        scclSum, sp, comm, nullptr);
        log.checkResult(result, error ? scclInvalidArgument : scclSuccess, "the call with NaN");
        bool as_policy = true;
        for (float x : recv) as_policy = as_policy && (error ? x == 5.0f : std::isnan(x));
        log.check(as_policy, error ? "recvbuf untouched" : "recvbuf all NaN");
        scclSparseStats_t s{};
        s.size = sizeof(s);
        scclSparsifierGetStats(sp, &s);
        log.check(s.iteration == 0, "the step did not count");
        send[1999] = 1.0f;
        log.checkResult(scclSparseAllreduce(send.data(), recv.data(), 2000, scclFloat32, scclSum,
                                            sp, comm, nullptr),
                        scclSuccess, "the next, finite call");
        scclSparsifierDestroy(sp);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("hierarchy node: scclSparsifierMaskSent is refused, the communicator stays usable",
          "[.hierarchy]") {
  requireNodesOfTwo();
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})");
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &hier), scclSuccess,
                         "create"))
      return;
    std::vector<float> send(1000), recv(1000), mask(1000, 1.0f);
    for (size_t i = 0; i < send.size(); ++i) send[i] = gradient(rank, 0, i);
    log.checkResult(scclSparseAllreduce(send.data(), recv.data(), 1000, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "call");
    log.checkResult(scclSparsifierMaskSent(sp, mask.data(), 1000, scclFloat32), scclInvalidUsage,
                    "mask on a hierarchical sparsifier");
    log.check(mask == std::vector<float>(1000, 1.0f), "the buffer is untouched");
    log.checkResult(scclSparseAllreduce(send.data(), recv.data(), 1000, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "the next call");
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
