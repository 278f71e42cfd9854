// The event communicator over in-process ranks: with thresholds zero it is D-PSGD exactly, with
// adaptive and static thresholds it matches the independent model of support/event_reference.h
// bitwise (events, thresholds, parameters), its statistics count what was sent, the asynchronous
// mode stays within the convex hull of the inputs, and bad arguments are rejected without side
// effects.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "support/event_reference.h"
#include "support/local_ranks.h"

namespace {

using sccl_test::EventModel;
using sccl_test::EventModelConfig;

const std::vector<size_t> kSizes = {7, 130, 1, 64, 33};

template <typename T>
constexpr scclDataType_t dtypeOf() {
  return sizeof(T) == 4 ? scclFloat32 : scclFloat64;
}

// Runs `passes` training passes on every rank (gradient step, then scclEventCommStep) and checks
// each rank's parameters, per-tensor events and thresholds bitwise against the model.
template <typename T>
std::vector<std::string> runAgainstModel(int nranks, const EventModelConfig& model_config,
                                         int passes, bool explicit_ring = false) {
  const uint64_t seed = 1234;
  const double lr = 0.05;
  std::vector<std::vector<int>> graph;
  for (int r = 0; r < nranks; ++r) graph.push_back(sccl_test::ringNeighbours(r, nranks));
  EventModel<T> model(model_config, nranks, graph, kSizes, seed, lr);
  for (int p = 0; p < passes; ++p) model.pass();
  scclEventConfig_t config = sccl_test::toEventConfig(model_config);
  return sccl_test::runLocalRanks(nranks, [&](int rank, scclComm_t comm, sccl_test::RankLog& log) {
    const size_t count = model.count();
    const int ntensors = static_cast<int>(kSizes.size());
    scclEventComm_t ec = nullptr;
    const std::vector<int>& mine = graph[rank];
    // The explicit list is given in descending order: the library sorts it.
    std::vector<int> reversed(mine.rbegin(), mine.rend());
    scclResult_t created =
        explicit_ring ? scclEventCommCreate(&ec, comm, count, dtypeOf<T>(), kSizes.data(), ntensors,
                                            reversed.data(), static_cast<int>(reversed.size()),
                                            nullptr, &config)
                      : scclEventCommCreate(&ec, comm, count, dtypeOf<T>(), kSizes.data(), ntensors,
                                            nullptr, 0, nullptr, &config);
    if (!log.checkResult(created, scclSuccess, "scclEventCommCreate")) return;
    std::vector<T> x(count);
    for (size_t i = 0; i < count; ++i)
      x[i] = static_cast<T>(sccl_test::initialParam(seed, rank, i));
    for (int p = 0; p < passes; ++p) {
      EventModel<T>::gradientStep(x.data(), count, seed, rank, uint64_t(p), lr);
      if (!log.checkResult(scclEventCommStep(ec, x.data(), count, dtypeOf<T>(), nullptr),
                           scclSuccess, "scclEventCommStep"))
        break;
    }
    const std::vector<T>& want = model.params(rank);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += std::memcmp(&x[i], &want[i], sizeof(T)) != 0;
    log.check(wrong == 0, std::to_string(wrong) + " parameters differ from the model");
    std::vector<uint64_t> events(kSizes.size());
    std::vector<double> thresholds(kSizes.size());
    log.checkResult(scclEventCommGetTensorStats(ec, events.data(), thresholds.data(), ntensors),
                    scclSuccess, "GetTensorStats");
    uint64_t total = 0;
    for (size_t t = 0; t < kSizes.size(); ++t) {
      total += events[t];
      log.check(events[t] == model.events(rank, t),
                "tensor " + std::to_string(t) + ": " + std::to_string(events[t]) +
                    " events, model " + std::to_string(model.events(rank, t)));
      log.check(thresholds[t] == model.threshold(rank, t),
                "threshold of tensor " + std::to_string(t));
    }
    scclEventStats_t stats{};
    stats.size = sizeof(stats);
    log.checkResult(scclEventCommGetStats(ec, &stats), scclSuccess, "GetStats");
    const uint64_t degree = graph[rank].size();
    log.check(stats.passes == uint64_t(passes), "passes counted");
    log.check(stats.events == total, "events counted");
    log.check(stats.messagesSent == total * degree, "messages = events x neighbours");
    log.check(stats.messagesDense == uint64_t(passes) * kSizes.size() * degree, "dense messages");
    log.check(stats.bytesDense == uint64_t(passes) * count * sizeof(T) * degree, "dense bytes");
    if (model_config.initial_passes > 0)
      log.check(stats.missingCopies == 0, "every copy present after forced sends");
    log.checkResult(scclEventCommDestroy(ec), scclSuccess, "scclEventCommDestroy");
  });
}

EventModelConfig staticZero() {
  EventModelConfig c;
  c.adaptive = false;
  c.static_threshold = 0.0;
  c.initial_passes = 0;
  return c;
}

}  // namespace

TEST_CASE("event communicator with threshold zero is D-PSGD exactly", "[event][comm]") {
  for (int nranks : {1, 2, 3, 4, 5}) {
    INFO(nranks << " ranks");
    REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(nranks, staticZero(), 12));
  }
  EventModelConfig horizon_zero;
  horizon_zero.horizon = 0.0;
  horizon_zero.initial_passes = 0;
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<double>(4, horizon_zero, 12));
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(4, staticZero(), 6, /*explicit_ring=*/true));
}

TEST_CASE("event communicator matches the model with adaptive thresholds", "[event][comm]") {
  EventModelConfig adaptive;
  adaptive.initial_passes = 3;
  for (int nranks : {2, 4}) {
    INFO(nranks << " ranks");
    REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(nranks, adaptive, 40));
  }
  adaptive.horizon = 3.0;
  adaptive.history = 4;
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<double>(3, adaptive, 40));
  adaptive.max_silent_passes = 5;
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(4, adaptive, 40));
}

TEST_CASE("event communicator averaging by differences matches the model", "[event][comm]") {
  EventModelConfig c;
  c.initial_passes = 3;
  c.average_differences = true;
  for (int nranks : {1, 2, 3, 4}) {
    INFO(nranks << " ranks");
    REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(nranks, c, 40));
  }
  c.adaptive = false;
  c.static_threshold = 3.0;
  c.initial_passes = 0;
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<double>(3, c, 12));
}

TEST_CASE("event communicator matches the model with a static threshold", "[event][comm]") {
  EventModelConfig c;
  c.adaptive = false;
  c.static_threshold = 0.02;
  c.initial_passes = 2;
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(4, c, 30));
  // Without forced passes some tensors start without any copy: they count with the own tensor.
  c.initial_passes = 0;
  c.static_threshold = 3.0;
  REQUIRE_NO_RANK_FAILURES(runAgainstModel<float>(3, c, 10));
}

TEST_CASE("event communicator sends fewer messages as the threshold grows", "[event][comm]") {
  // The adaptive model sends less than D-PSGD (the fraction itself is checked by the model run).
  EventModelConfig adaptive;
  adaptive.initial_passes = 3;
  std::vector<std::vector<int>> graph;
  for (int r = 0; r < 4; ++r) graph.push_back(sccl_test::ringNeighbours(r, 4));
  EventModel<float> model(adaptive, 4, graph, kSizes, 1234, 0.05);
  for (int p = 0; p < 40; ++p) model.pass();
  uint64_t events = 0;
  for (int r = 0; r < 4; ++r)
    for (size_t t = 0; t < kSizes.size(); ++t) events += model.events(r, t);
  CHECK(events < 4 * 40 * kSizes.size());
  CHECK(events >= 4 * 3 * kSizes.size());
}

TEST_CASE("event communicator asynchronous mode averages only real copies", "[event][comm]") {
  // No gradient steps: every average of copies stays within [min, max] of the initial values,
  // which a torn or garbage copy would break; with threshold zero every pass sends.
  const std::vector<size_t> sizes = {4096, 3, 1000};
  const size_t count = 5099;
  auto failures =
      sccl_test::runLocalRanks(4, [&](int rank, scclComm_t comm, sccl_test::RankLog& log) {
        scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
        config.synchronous = 0;
        config.horizon = 0.0;
        scclEventComm_t ec = nullptr;
        if (!log.checkResult(scclEventCommCreate(&ec, comm, count, scclFloat32, sizes.data(), 3,
                                                 nullptr, 0, nullptr, &config),
                             scclSuccess, "create"))
          return;
        std::vector<float> x(count);
        for (size_t i = 0; i < count; ++i) x[i] = float(rank) + 0.5f * float(i % 2);
        for (int p = 0; p < 200; ++p) {
          if (!log.checkResult(scclEventCommStep(ec, x.data(), count, scclFloat32, nullptr),
                               scclSuccess, "step"))
            break;
        }
        auto [lo, hi] = std::minmax_element(x.begin(), x.end());
        log.check(*lo >= 0.0f && *hi <= 3.5f, "values left the convex hull of the inputs");
        scclEventStats_t stats{};
        stats.size = sizeof(stats);
        log.checkResult(scclEventCommGetStats(ec, &stats), scclSuccess, "stats");
        log.check(stats.messagesSent == stats.messagesDense, "threshold zero sends every pass");
        log.check(stats.messageFraction == 1.0, "message fraction 1");
        // Synchronise before destruction so that no rank is still putting into a freed window's
        // neighbour (the in-process windows would survive it, but this is the documented usage).
        log.checkResult(scclBarrier(comm), scclSuccess, "barrier");
        log.checkResult(scclEventCommDestroy(ec), scclSuccess, "destroy");
      });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("event communicator model average is the rank-order mean", "[event][comm]") {
  auto failures = sccl_test::runLocalRanks(3, [](int rank, scclComm_t comm,
                                                 sccl_test::RankLog& log) {
    const size_t sizes[] = {5, 6};
    scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
    scclEventComm_t ec = nullptr;
    if (!log.checkResult(
            scclEventCommCreate(&ec, comm, 11, scclFloat32, sizes, 2, nullptr, 0, nullptr, &config),
            scclSuccess, "create"))
      return;
    std::vector<float> x(11), avg(11);
    for (size_t i = 0; i < 11; ++i) x[i] = 0.1f * float(rank + 1) + float(i);
    log.checkResult(scclEventCommAverageModel(ec, x.data(), avg.data(), 11, scclFloat32, nullptr),
                    scclSuccess, "average");
    for (size_t i = 0; i < 11; ++i) {
      float want = ((0.1f * 1 + float(i)) + (0.1f * 2 + float(i))) + (0.1f * 3 + float(i));
      want /= 3.0f;
      log.check(avg[i] == want, "element " + std::to_string(i));
    }
    log.checkResult(scclEventCommAverageModel(ec, x.data(), x.data(), 11, scclFloat32, nullptr),
                    scclSuccess, "in place");
    log.check(std::memcmp(x.data(), avg.data(), sizeof(float) * 11) == 0, "in place agrees");
    log.checkResult(scclEventCommDestroy(ec), scclSuccess, "destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("event communicator rejects bad arguments without side effects", "[event][comm]") {
  auto failures = sccl_test::runLocalRanks(4, [](int rank, scclComm_t comm,
                                                 sccl_test::RankLog& log) {
    const size_t sizes[] = {10, 20};
    scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
    scclEventComm_t ec = nullptr;
    auto expect = [&](scclResult_t got, scclResult_t want, const char* what) {
      log.checkResult(got, want, what);
      log.check(ec == nullptr, std::string(what) + ": output written on failure");
    };
    const int ring[] = {(rank + 3) % 4, (rank + 1) % 4};
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 0, nullptr, 0, nullptr, &config),
           scclInvalidArgument, "empty tensor list");
    expect(
        scclEventCommCreate(&ec, comm, 30, scclFloat32, nullptr, 2, nullptr, 0, nullptr, &config),
        scclInvalidArgument, "tensorSizes NULL");
    expect(scclEventCommCreate(&ec, comm, 31, scclFloat32, sizes, 2, nullptr, 0, nullptr, &config),
           scclInvalidArgument, "sizes not summing to count");
    const size_t with_empty[] = {30, 0};
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, with_empty, 2, nullptr, 0, nullptr,
                               &config),
           scclInvalidArgument, "empty tensor");
    expect(scclEventCommCreate(&ec, comm, 30, scclInt32, sizes, 2, nullptr, 0, nullptr, &config),
           scclInvalidArgument, "integer parameters");
    const int out_of_range[] = {(rank + 1) % 4, 4};
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, out_of_range, 2, nullptr,
                               &config),
           scclInvalidArgument, "neighbour out of range");
    const int self[] = {rank};
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, self, 1, nullptr, &config),
           scclInvalidArgument, "self as neighbour");
    const int twice[] = {(rank + 1) % 4, (rank + 1) % 4};
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, twice, 2, nullptr, &config),
           scclInvalidArgument, "duplicate neighbour");
    const double bad_weights[] = {0.5, 0.5, 0.5};
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, ring, 2, bad_weights, &config),
           scclInvalidArgument, "weights not summing to 1");
    expect(
        scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, nullptr, 0, bad_weights, &config),
        scclInvalidArgument, "weights without a neighbour list");
    scclEventConfig_t bad = config;
    bad.horizon = -1.0;
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, nullptr, 0, nullptr, &bad),
           scclInvalidArgument, "negative horizon");
    bad = config;
    bad.history = 0;
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, nullptr, 0, nullptr, &bad),
           scclInvalidArgument, "history 0");
    bad = config;
    bad.magic = 0;
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, nullptr, 0, nullptr, &bad),
           scclInvalidArgument, "config without initializer");
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, nullptr, 0, nullptr, nullptr),
           scclInvalidArgument, "config NULL");
    // Collective checks: every rank gets scclInvalidUsage, and the communicator stays usable.
    const int one_way[] = {(rank + 1) % 4};  // i lists i + 1, which lists i + 2: not symmetric
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, one_way, 1, nullptr, &config),
           scclInvalidUsage, "asymmetric graph");
    scclEventConfig_t differs = config;
    differs.initialPasses = rank == 2 ? 5 : 30;
    expect(scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, nullptr, 0, nullptr, &differs),
           scclInvalidUsage, "config differing across ranks");
    scclResult_t async = scclSuccess;
    log.checkResult(scclCommGetAsyncError(comm, &async), scclSuccess, "async error");
    log.check(async == scclSuccess, "the communicator stayed healthy");

    // A valid one, with an explicit complete graph and Metropolis-like weights.
    int others[3], n = 0;
    for (int r = 0; r < 4; ++r)
      if (r != rank) others[n++] = r;
    const double weights[] = {0.25, 0.25, 0.25, 0.25};
    if (!log.checkResult(
            scclEventCommCreate(&ec, comm, 30, scclFloat32, sizes, 2, others, 3, weights, &config),
            scclSuccess, "valid create"))
      return;
    std::vector<float> x(30, 1.0f);
    log.checkResult(scclEventCommStep(ec, x.data(), 29, scclFloat32, nullptr), scclInvalidArgument,
                    "step with a wrong count");
    log.checkResult(scclEventCommStep(ec, x.data(), 30, scclFloat64, nullptr), scclInvalidArgument,
                    "step with a wrong dtype");
    log.checkResult(scclEventCommStep(ec, nullptr, 30, scclFloat32, nullptr), scclInvalidArgument,
                    "step with NULL params");
    log.checkResult(scclEventCommStep(nullptr, x.data(), 30, scclFloat32, nullptr),
                    scclInvalidArgument, "step with NULL event communicator");
    uint64_t events[2];
    log.checkResult(scclEventCommGetTensorStats(ec, events, nullptr, 3), scclInvalidArgument,
                    "tensor stats with a wrong count");
    scclEventStats_t stats{};
    log.checkResult(scclEventCommGetStats(ec, &stats), scclInvalidArgument, "stats without size");
    stats.size = sizeof(stats);
    log.checkResult(scclEventCommGetStats(ec, &stats), scclSuccess, "stats");
    log.check(stats.passes == 0, "rejected steps did not count");
    log.checkResult(scclEventCommStep(ec, x.data(), 30, scclFloat32, nullptr), scclSuccess, "step");
    log.check(x[0] == 1.0f && x[29] == 1.0f, "the average of equal tensors is unchanged");
    log.checkResult(scclEventCommDestroy(ec), scclSuccess, "destroy");
    log.checkResult(scclEventCommDestroy(ec), scclInvalidArgument, "second destroy");
    log.checkResult(scclEventCommStep(ec, x.data(), 30, scclFloat32, nullptr), scclInvalidArgument,
                    "step after destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("event communicator fires at the scripted passes and averages with the last copy",
          "[event][comm]") {
  // Two ranks, two tensors of 4 elements. Before every pass each rank sets tensor 0 to v_p in
  // every element (norm 2 v_p, the trigger test's dyadic trajectory) and tensor 1 to 3. Adaptive
  // rule, horizon 1, history 2, 2 forced passes: tensor 0 fires at passes 0 1 4 6 8 10 and tensor
  // 1 at 0 1 only. After each pass tensor 0 holds (v_p + v_last) / 2 with v_last the value of the
  // neighbour's last event, exactly.
  const std::vector<double> norms = {4.0, 4.5, 5.0, 6.5, 7.5, 8.0, 8.25, 8.25, 7.5, 7.5, 9.0};
  const std::vector<uint64_t> fires0 = {0, 1, 4, 6, 8, 10};
  auto failures = sccl_test::runLocalRanks(2, [&](int, scclComm_t comm, sccl_test::RankLog& log) {
    const size_t sizes[] = {4, 4};
    scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
    config.initialPasses = 2;
    scclEventComm_t ec = nullptr;
    if (!log.checkResult(
            scclEventCommCreate(&ec, comm, 8, scclFloat32, sizes, 2, nullptr, 0, nullptr, &config),
            scclSuccess, "create"))
      return;
    float last_sent = 0.0f;
    uint64_t expected_events = 0;
    for (size_t p = 0; p < norms.size(); ++p) {
      const float v = float(norms[p] / 2.0);
      float x[8] = {v, v, v, v, 3.0f, 3.0f, 3.0f, 3.0f};
      if (!log.checkResult(scclEventCommStep(ec, x, 8, scclFloat32, nullptr), scclSuccess, "step"))
        break;
      bool fired0 = std::find(fires0.begin(), fires0.end(), p) != fires0.end();
      bool fired1 = p < 2;
      if (fired0) last_sent = v;
      expected_events += uint64_t(fired0) + uint64_t(fired1);
      const std::string at = "pass " + std::to_string(p);
      scclEventStats_t stats{};
      stats.size = sizeof(stats);
      log.checkResult(scclEventCommGetStats(ec, &stats), scclSuccess, "stats");
      log.check(stats.lastPassEvents == uint64_t(fired0) + uint64_t(fired1), at + ": events");
      log.check(stats.events == expected_events, at + ": cumulative events");
      const float want = float(0.5 * double(v) + 0.5 * double(last_sent));
      log.check(x[0] == want && x[3] == want, at + ": tensor 0 averaged with the last copy");
      log.check(x[4] == 3.0f && x[7] == 3.0f, at + ": tensor 1 unchanged");
      log.check(stats.maxStaleness <= p, at + ": staleness");
    }
    uint64_t events[2];
    double thresholds[2];
    log.checkResult(scclEventCommGetTensorStats(ec, events, thresholds, 2), scclSuccess, "tensors");
    log.check(events[0] == 6 && events[1] == 2, "events per tensor");
    log.check(thresholds[0] == 0.5625, "threshold of tensor 0 after pass 10");
    log.check(thresholds[1] == 3.0, "threshold of tensor 1: mean of slopes 6 and 0");
    log.checkResult(scclEventCommDestroy(ec), scclSuccess, "destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
