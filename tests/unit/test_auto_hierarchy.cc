// algorithm "auto" on a communicator whose nodes hold several ranks (in-process ranks grouped by
// SCCL_RANKS_PER_NODE=2 in the CTest node_hierarchy_local; hidden tag, the setting is read once
// per process): every candidate is priced flat and as "hierarchy": "node"; a fast link inside the
// node and a slow one across make the hierarchical form the choice, equal links the flat one;
// every rank prices the same links (the slowest node's); hierarchy "flat" and "node" restrict
// the choice; the created sparsifier runs and every rank
// gets the same bits; nodes of different sizes refuse "node" on every rank.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sparsifier/sparsifier.h"
#include "support/local_ranks.h"
#include "support/node_hierarchy_inputs.h"
#include "tuning/auto_choice.h"

using sccl_test::RankLog;
using sccl_test::requireNodesOfTwo;
using sccl_test::runLocalRanks;

namespace {

scclSparseConfig_t autoConfig(const char* hierarchy) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = "auto";
  config.density = 0.01;
  config.hierarchy = hierarchy;
  return config;
}

// A flat and a node candidate of each preset, one local work for all, on the given links.
sccl::AutoChoice measurements(const sccl::LinkModel& inside, const sccl::LinkModel& across) {
  sccl::AutoChoice choice;
  choice.probe.link = across;  // the whole communicator's all-reduce is paced by its slowest link
  choice.inside_probe.link = inside;
  choice.across_probe.link = across;
  choice.layout = {2, 2};
  const auto& names = sccl::autoCandidates();
  for (size_t i = 0; i < names.size(); ++i)
    for (bool node : {false, true}) {
      sccl::AutoCandidate c;
      c.algorithm = names[i];
      c.local_s_per_element = 1e-9;
      c.node_hierarchy = node;
      c.config_index = int(i);
      choice.candidates.push_back(c);
    }
  return choice;
}

}  // namespace

TEST_CASE("auto prices the hierarchy from the links inside and across nodes", "[.hierarchy]") {
  sccl::AutoCandidateConfigs configs;
  REQUIRE(sccl::resolveAutoCandidates(autoConfig(nullptr), &configs) == scclSuccess);
  CHECK(configs.flat);
  CHECK(configs.node);
  const size_t count = 25000000;
  // 1 Gbit/s between nodes, 100 GB/s inside (NVLink-like): the node's one exchange of 1/L the
  // bytes across the slow link wins.
  sccl::AutoChoice fast_inside = measurements({2e-6, 1e11}, {30e-6, 1.25e8});
  sccl::rankAutoCandidates(configs, count, scclFloat32, 4, &fast_inside);
  REQUIRE(fast_inside.algorithm != nullptr);
  CHECK(fast_inside.node_hierarchy);
  const sccl::AutoCandidate& flat_micro = fast_inside.candidates[2];  // micro flat
  const sccl::AutoCandidate& node_micro = fast_inside.candidates[3];  // micro node
  REQUIRE(std::string(flat_micro.algorithm) == "micro");
  REQUIRE(node_micro.node_hierarchy);
  // The bytes each rank sends across nodes: the preset over half the vector among 2 nodes,
  // against the flat preset among 4 ranks.
  CHECK(node_micro.predicted.bytes.sent < flat_micro.predicted.bytes.sent);
  CHECK(node_micro.predicted.seconds < flat_micro.predicted.seconds);
  // One link everywhere, as slow inside as across: the node's dense reduce-scatter and all-gather
  // of the whole vector cost more than they save, so a flat form is chosen.
  sccl::AutoChoice one_link = measurements({30e-6, 1.25e8}, {30e-6, 1.25e8});
  sccl::rankAutoCandidates(configs, count, scclFloat32, 4, &one_link);
  REQUIRE(one_link.algorithm != nullptr);
  CHECK_FALSE(one_link.node_hierarchy);
  // Deterministic: the same measurements, the same choice.
  sccl::AutoChoice again = measurements({2e-6, 1e11}, {30e-6, 1.25e8});
  sccl::rankAutoCandidates(configs, count, scclFloat32, 4, &again);
  CHECK(again.chosen == fast_inside.chosen);
}

TEST_CASE("auto with nodes of two: the hierarchy among the candidates, restricted on request",
          "[.hierarchy]") {
  requireNodesOfTwo();
  for (const char* hierarchy : {static_cast<const char*>(nullptr), "flat", "node"}) {
    DYNAMIC_SECTION("hierarchy " << (hierarchy ? hierarchy : "NULL")) {
      const size_t count = 1 << 16;
      std::vector<std::vector<float>> outputs(4);
      std::vector<std::vector<double>> links(4);
      auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
        sccl::GivenLink given;
        given.latency_ns = 30000;
        given.rate_mbits = 1000;
        sccl::AutoChoice choice;
        if (!log.checkResult(sccl::chooseAlgorithm(comm, count, scclFloat32, autoConfig(hierarchy),
                                                   given, &choice),
                             scclSuccess, "choice"))
          return;
        size_t flat = 0, node = 0;
        for (const sccl::AutoCandidate& c : choice.candidates) (c.node_hierarchy ? node : flat)++;
        const bool want_flat = hierarchy == nullptr || std::string(hierarchy) == "flat";
        const bool want_node = hierarchy == nullptr || std::string(hierarchy) == "node";
        log.check(
            (flat > 0) == want_flat && (node > 0) == want_node,
            "flat " + std::to_string(flat) + " and node " + std::to_string(node) + " candidates");
        links[size_t(rank)] = {
            choice.inside_probe.link.latency_s, choice.inside_probe.link.bytes_per_s,
            choice.across_probe.link.latency_s, choice.across_probe.link.bytes_per_s};
        if (want_node) {
          log.check(choice.layout.nodes == 2 && choice.layout.local_ranks == 2, "2 x 2 nodes");
          log.check(choice.across_probe.link.bytes_per_s == 1.25e8,
                    "the given link is the one across nodes");
          log.check(sccl::describeAutoChoice(choice).find("nodes 2 x 2") != std::string::npos,
                    "the log names the layout: " + sccl::describeAutoChoice(choice));
        }
        const scclSparseConfig_t config = autoConfig(hierarchy);
        scclSparsifier_t sp = nullptr;
        if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config),
                             scclSuccess, "create"))
          return;
        if (hierarchy != nullptr)
          log.check((sp->hierarchy != nullptr) == want_node, "the sparsifier's hierarchy");
        std::vector<float> send(count), recv(count);
        for (int t = 0; t < 3; ++t) {
          for (size_t i = 0; i < count; ++i)
            send[i] = float(int((i * 2654435761u + size_t(rank) * 97 + size_t(t)) % 2001) - 1000);
          log.checkResult(scclSparseAllreduce(send.data(), recv.data(), count, scclFloat32, scclSum,
                                              sp, comm, nullptr),
                          scclSuccess, "call " + std::to_string(t));
        }
        outputs[size_t(rank)] = recv;
        scclSparsifierDestroy(sp);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
      for (int r = 1; r < 4; ++r) CHECK(outputs[size_t(r)] == outputs[0]);
      // Each node probed its own links; every rank prices the same (the slowest) ones.
      for (int r = 1; r < 4; ++r) CHECK(links[size_t(r)] == links[0]);
    }
  }
}

TEST_CASE("auto with hierarchy node on nodes of different sizes fails every rank", "[.hierarchy]") {
  requireNodesOfTwo();
  auto failures = runLocalRanks(3, [&](int, scclComm_t comm, RankLog& log) {
    const scclSparseConfig_t config = autoConfig("node");
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 4096, scclFloat32, &config), scclInvalidUsage,
                    "3 ranks in nodes of 2 and 1");
    // hierarchy unset: the nodes are not alike, so auto stays flat and creates.
    const scclSparseConfig_t either = autoConfig(nullptr);
    if (log.checkResult(scclSparsifierCreate(&sp, comm, 4096, scclFloat32, &either), scclSuccess,
                        "auto, hierarchy unset"))
      scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
