// algorithm "auto" (src/tuning/auto_choice.h): the same choice on every rank, the fastest
// prediction for given measurements (deterministically), the refusals, a working sparsifier and
// its predicted time in the statistics.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "support/local_ranks.h"
#include "tuning/auto_choice.h"

using namespace sccl_test;

namespace {

scclSparseConfig_t autoConfig(double density) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = "auto";
  config.density = density;
  return config;
}

// Every candidate with the same local work per element (seconds).
sccl::AutoChoice measurements(double latency_s, double bytes_per_s, double local) {
  sccl::AutoChoice choice;
  choice.probe.link = {latency_s, bytes_per_s};
  for (const char* name : sccl::autoCandidates()) {
    sccl::AutoCandidate c;
    c.algorithm = name;
    c.local_s_per_element = local;
    choice.candidates.push_back(c);
  }
  return choice;
}

sccl::AutoCandidate& candidate(sccl::AutoChoice& choice, const char* name) {
  for (sccl::AutoCandidate& c : choice.candidates)
    if (std::strcmp(c.algorithm, name) == 0) return c;
  FAIL("no candidate " << name);
  return choice.candidates.front();
}

// After a refused creation the communicator still sums (two ranks).
void checkStillUsable(scclComm_t comm, RankLog& log, const std::string& after) {
  float value = 1.0f, sum = 0.0f;
  log.checkResult(scclAllReduce(&value, &sum, 1, scclFloat32, scclSum, comm, nullptr),
                  scclSuccess, "all-reduce after " + after);
  log.check(sum == 2.0f, "the all-reduce after " + after + " sums");
}

}  // namespace

TEST_CASE("auto picks the fastest prediction, the same for the same measurements",
          "[tuning][auto]") {
  const scclSparseConfig_t config = autoConfig(0.001);
  // A slow link: the gradient's bytes decide, so a sparse preset of density k is chosen (not
  // dense, not Top-k, whose union grows with the ranks), the one predicted fastest.
  sccl::AutoChoice slow = measurements(30e-6, 1.25e8, 1e-9);
  sccl::rankAutoCandidates(config, 25000000, scclFloat32, 8, &slow);
  REQUIRE(slow.algorithm != nullptr);
  const std::string first = slow.algorithm;
  CHECK(first != "dense");
  CHECK(first != "topk");
  for (const sccl::AutoCandidate& c : slow.candidates)
    CHECK(c.predicted.seconds >= candidate(slow, first.c_str()).predicted.seconds);
  sccl::AutoChoice again = measurements(30e-6, 1.25e8, 1e-9);
  sccl::rankAutoCandidates(config, 25000000, scclFloat32, 8, &again);
  CHECK(std::string(again.algorithm) == first);
  for (size_t i = 0; i < slow.candidates.size(); ++i)
    CHECK(again.candidates[i].predicted.seconds == slow.candidates[i].predicted.seconds);
  // Equal predictions: the first in candidate order (micro before exdyna, the same messages).
  CHECK(candidate(slow, "micro").predicted.seconds == candidate(slow, "exdyna").predicted.seconds);
  sccl::AutoChoice tie = measurements(30e-6, 1.25e8, 1e-9);
  for (sccl::AutoCandidate& c : tie.candidates) {
    if (std::strcmp(c.algorithm, "micro") != 0 && std::strcmp(c.algorithm, "exdyna") != 0)
      c.local_s_per_element = -1;
  }
  sccl::rankAutoCandidates(config, 25000000, scclFloat32, 8, &tie);
  CHECK(std::string(tie.algorithm) == "micro");

  // A fast link and sparse local work 20x dense's: dense.
  sccl::AutoChoice fast = measurements(1e-6, 5e10, 2e-8);
  candidate(fast, "dense").local_s_per_element = 1e-9;
  sccl::rankAutoCandidates(config, 25000000, scclFloat32, 8, &fast);
  CHECK(std::string(fast.algorithm) == "dense");

  // A candidate that could not run on some rank is never chosen.
  sccl::AutoChoice missing = measurements(30e-6, 1.25e8, 1e-9);
  candidate(missing, first.c_str()).local_s_per_element = -1;
  sccl::rankAutoCandidates(config, 25000000, scclFloat32, 8, &missing);
  REQUIRE(missing.algorithm != nullptr);
  CHECK(std::string(missing.algorithm) != first);

  // None can run: no choice.
  sccl::AutoChoice none = measurements(30e-6, 1.25e8, -1);
  sccl::rankAutoCandidates(config, 25000000, scclFloat32, 8, &none);
  CHECK(none.algorithm == nullptr);
}

TEST_CASE("auto chooses one preset on every rank and the sparsifier runs it", "[tuning][auto]") {
  const size_t count = 100000;
  for (int nranks : {1, 3}) {
    std::vector<std::string> chosen(static_cast<size_t>(nranks));
    std::vector<double> predicted(static_cast<size_t>(nranks), -1);
    auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
      const scclSparseConfig_t config = autoConfig(0.01);
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config),
                           scclSuccess, "scclSparsifierCreate auto"))
        return;
      const char* name = nullptr;
      log.checkResult(scclSparsifierGetAlgorithm(sp, &name), scclSuccess, "GetAlgorithm");
      chosen[size_t(rank)] = name != nullptr ? name : "";
      std::vector<float> grad(count), out(count);
      for (size_t i = 0; i < count; ++i) grad[i] = float(testValue(3, rank, i)) * 0.01f;
      log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum,
                                          sp, comm, nullptr),
                      scclSuccess, "scclSparseAllreduce");
      scclSparseStats_t stats{};
      stats.size = sizeof(stats);
      log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "GetStats");
      predicted[size_t(rank)] = stats.predictedTimeUs;
      // A caller built against 0.1.0's struct gets the prefix it asked for.
      scclSparseStats_t old{};
      old.size = offsetof(scclSparseStats_t, predictedTimeUs);
      old.predictedTimeUs = -1;
      log.checkResult(scclSparsifierGetStats(sp, &old), scclSuccess, "GetStats, 0.1.0 size");
      log.check(old.predictedTimeUs == -1 && old.iteration == 1, "0.1.0-sized stats");
      log.checkResult(scclSparsifierReset(sp), scclSuccess, "reset");
      log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "GetStats after reset");
      log.check(stats.predictedTimeUs == predicted[size_t(rank)], "prediction kept by reset");
      log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
      // A preset named by the caller has no prediction.
      scclSparseConfig_t fixed = autoConfig(0.01);
      fixed.algorithm = "micro";
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &fixed),
                           scclSuccess, "scclSparsifierCreate micro"))
        return;
      log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "GetStats micro");
      log.check(stats.predictedTimeUs == 0, "no prediction for a named preset");
      log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy micro");
    });
    REQUIRE_NO_RANK_FAILURES(failures);
    // The prediction is the agreed model's: positive and the same on every rank.
    CHECK(predicted[0] > 0);
    for (double p : predicted) CHECK(p == predicted[0]);
    bool candidate_name = false;
    for (const char* name : sccl::autoCandidates()) candidate_name |= chosen[0] == name;
    INFO("n=" << nranks << " chose " << chosen[0]);
    CHECK(candidate_name);
    for (const std::string& name : chosen) CHECK(name == chosen[0]);
  }
}

TEST_CASE("auto against a preset on another rank fails on every rank, which stays usable",
          "[tuning][auto]") {
  auto failures = runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t config = autoConfig(0.01);
    if (rank == 1) config.algorithm = "micro";
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &config),
                    scclInvalidUsage, "mismatched creation");
    checkStillUsable(comm, log, "the refusal");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("auto refuses a config that names its axes, and resolves only at creation",
          "[tuning][auto]") {
  auto failures = runLocalRanks(1, [](int, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t config = autoConfig(0.01);
    config.estimator = "topk";
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &config),
                    scclInvalidArgument, "auto with an estimator");
    log.check(std::string(scclGetLastError(comm)).find("auto") != std::string::npos,
              std::string("the message names auto: ") + scclGetLastError(comm));
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  scclSparseConfig_t parsed = SCCL_SPARSE_CONFIG_INITIALIZER;
  REQUIRE(scclSparseConfigFromJson("{\"algorithm\": \"auto\", \"density\": 0.001}", &parsed) ==
          scclSuccess);
  CHECK(std::string(parsed.algorithm) == "auto");
  CHECK(scclSparseConfigFromJson("{\"algorithm\": \"automatic\"}", &parsed) ==
        scclInvalidArgument);
}

TEST_CASE("auto probes the link once per communicator; later sparsifiers reuse it",
          "[tuning][auto]") {
  auto failures = runLocalRanks(2, [](int, scclComm_t comm, RankLog& log) {
    const scclSparseConfig_t config = autoConfig(0.01);
    sccl::AutoChoice first, second;
    if (!log.checkResult(sccl::chooseAlgorithm(comm, 10000, scclFloat32, config,
                                               sccl::GivenLink{}, &first),
                         scclSuccess, "first choice"))
      return;
    log.check(!first.probe.reused && first.probe.seconds > 0, "the first choice probes");
    if (!log.checkResult(sccl::chooseAlgorithm(comm, 20000, scclFloat32, config,
                                               sccl::GivenLink{}, &second),
                         scclSuccess, "second choice"))
      return;
    log.check(second.probe.reused && second.probe.seconds == 0, "the second reuses the probe");
    log.check(second.probe.link.latency_s == first.probe.link.latency_s &&
                  second.probe.link.bytes_per_s == first.probe.link.bytes_per_s &&
                  second.probe.ranks_per_machine == first.probe.ranks_per_machine,
              "the reused link is the probed one");
    log.check(sccl::describeLinkProbe(second.probe).find("(reused)") != std::string::npos,
              "the log says reused: " + sccl::describeLinkProbe(second.probe));
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("a link given by settings replaces the probe and steers the choice", "[tuning][auto]") {
  // 20 us and 1 Gbit/s given: 4 MB of dense gradient cost 32 ms on the wire, a sparse preset far
  // less, whatever this machine's calibration.
  std::vector<std::string> chosen(2);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    sccl::GivenLink given;
    given.latency_ns = 20000;
    given.rate_mbits = 1000;
    sccl::AutoChoice choice;
    if (!log.checkResult(sccl::chooseAlgorithm(comm, 1 << 20, scclFloat32, autoConfig(0.01),
                                               given, &choice),
                         scclSuccess, "choice on a given link"))
      return;
    log.check(choice.probe.link.latency_s == 20e-6 && choice.probe.link.bytes_per_s == 1.25e8,
              "the given link is the model's");
    log.check(!choice.probe.reused, "a given link is not a reused one");
    log.check(sccl::describeLinkProbe(choice.probe).find("(given)") != std::string::npos,
              "the log says given: " + sccl::describeLinkProbe(choice.probe));
    chosen[size_t(rank)] = choice.algorithm;
    // A second choice on this communicator reuses the stored link and still says it was given.
    sccl::AutoChoice again;
    if (!log.checkResult(sccl::chooseAlgorithm(comm, 1 << 20, scclFloat32, autoConfig(0.01),
                                               given, &again),
                         scclSuccess, "second choice on the given link"))
      return;
    log.check(again.probe.reused && again.probe.link.bytes_per_s == 1.25e8,
              "the second choice reuses the given link");
    log.check(sccl::describeLinkProbe(again.probe).find("(given)") != std::string::npos,
              "a reused given link is logged as given: " + sccl::describeLinkProbe(again.probe));
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  // Only the rate given, on a new communicator: the latency is measured, the rate is the given
  // one; a later choice given another rate takes it over the stored link.
  failures = runLocalRanks(2, [&](int, scclComm_t comm, RankLog& log) {
    sccl::GivenLink rate_only;
    rate_only.rate_mbits = 1000;
    sccl::AutoChoice partial;
    if (!log.checkResult(sccl::chooseAlgorithm(comm, 1 << 20, scclFloat32, autoConfig(0.01),
                                               rate_only, &partial),
                         scclSuccess, "choice on a given rate"))
      return;
    log.check(!partial.probe.reused && partial.probe.link.bytes_per_s == 1.25e8 &&
                  partial.probe.link.latency_s > 0,
              "the given rate and a measured latency: " + sccl::describeLinkProbe(partial.probe));
    log.check(sccl::describeLinkProbe(partial.probe).find("(probed latency, given rate)") !=
                  std::string::npos,
              "the log says which: " + sccl::describeLinkProbe(partial.probe));
    sccl::GivenLink faster;
    faster.rate_mbits = 100000;
    sccl::AutoChoice later;
    log.checkResult(sccl::chooseAlgorithm(comm, 1 << 20, scclFloat32, autoConfig(0.01), faster,
                                          &later),
                    scclSuccess, "a later choice on another given rate");
    log.check(later.probe.reused && later.probe.link.bytes_per_s == 1.25e10 &&
                  later.probe.link.latency_s == partial.probe.link.latency_s,
              "the later given rate over the stored link");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  CHECK(chosen[0] == chosen[1]);
  CHECK(chosen[0] != "dense");
}

TEST_CASE("ranks given different links, or a link out of range, all fail and stay usable",
          "[tuning][auto]") {
  auto failures = runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    sccl::GivenLink given;
    given.latency_ns = rank == 0 ? 20000 : -1;  // rank 1 would probe while rank 0 skips it
    sccl::AutoChoice choice;
    log.checkResult(sccl::chooseAlgorithm(comm, 1000, scclFloat32, autoConfig(0.01), given,
                                          &choice),
                    scclInvalidUsage, "different link settings");
    sccl::GivenLink negative;
    negative.rate_mbits = -5;  // the same on both ranks: agreed, then refused by every rank
    log.checkResult(sccl::chooseAlgorithm(comm, 1000, scclFloat32, autoConfig(0.01), negative,
                                          &choice),
                    scclInvalidArgument, "a negative rate");
    checkStillUsable(comm, log, "the refusals");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  const auto check = [](int64_t latency_ns, int64_t rate_mbits) {
    sccl::GivenLink given;
    given.latency_ns = latency_ns;
    given.rate_mbits = rate_mbits;
    return sccl::checkGivenLink(given);
  };
  CHECK(check(-1, 0) == scclSuccess);
  CHECK(check(0, 1) == scclSuccess);
  CHECK(check(10'000'000'000, 10'000'000) == scclSuccess);
  CHECK(check(-2, 0) == scclInvalidArgument);
  CHECK(check(10'000'000'001, 0) == scclInvalidArgument);
  CHECK(check(-1, -1) == scclInvalidArgument);
  CHECK(check(-1, 10'000'001) == scclInvalidArgument);
}
