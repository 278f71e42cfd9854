// The EventGraD trigger on scripted norm trajectories (exact event passes and thresholds for the
// static and adaptive rules, forced initial sends, slope-history averaging, horizon), and the
// event config: defaults, JSON keys, and rejected values.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "event/event_config.h"
#include "event/event_trigger.h"
#include "sparsecoll/sparsecoll.h"

namespace {

// Dyadic norms, so every change, slope and threshold below is exact in binary.
const std::vector<double> kNorms = {4.0, 4.5, 5.0, 6.5, 7.5, 8.0, 8.25, 8.25, 7.5, 7.5, 9.0};

std::vector<uint64_t> eventPasses(sccl::TensorTrigger& trigger, const std::vector<double>& norms) {
  std::vector<uint64_t> passes;
  for (size_t p = 0; p < norms.size(); ++p) {
    if (trigger.decide(p, norms[p])) passes.push_back(p);
  }
  return passes;
}

sccl::TriggerConfig adaptive(double horizon, int history, int initial) {
  sccl::TriggerConfig c;
  c.adaptive = true;
  c.horizon = horizon;
  c.history = history;
  c.initial_passes = initial;
  return c;
}

}  // namespace

TEST_CASE("event trigger adaptive rule fires at the scripted passes", "[event][trigger]") {
  // Slopes 4, 0.5 (forced), then 3/3, 0.75/2, 0.75/2, 1.5/2; threshold = mean of the last two.
  sccl::TensorTrigger trigger(adaptive(1.0, 2, 2));
  CHECK(trigger.threshold() == 0.0);
  CHECK(eventPasses(trigger, kNorms) == std::vector<uint64_t>{0, 1, 4, 6, 8, 10});
  CHECK(trigger.threshold() == 0.5625);  // (0.375 + 0.75) / 2
  CHECK(trigger.events() == 6);
  CHECK(trigger.lastSentNorm() == 9.0);
  CHECK(trigger.lastSentPass() == 10);
}

TEST_CASE("event trigger threshold is horizon times slope and fixed until the next event",
          "[event][trigger]") {
  sccl::TensorTrigger trigger(adaptive(2.0, 2, 2));
  std::vector<uint64_t> passes;
  for (size_t p = 0; p < kNorms.size(); ++p) {
    if (trigger.decide(p, kNorms[p])) passes.push_back(p);
    // After pass 1 the threshold is 2 x (4 + 0.5) / 2 and stays so (the reference code would
    // multiply it by the horizon again on every pass).
    if (p >= 1 && p < 10) CHECK(trigger.threshold() == 4.5);
  }
  CHECK(passes == std::vector<uint64_t>{0, 1, 10});  // 9.0 - 4.5 = 4.5 >= 4.5 fires
  CHECK(trigger.threshold() == 1.0);                 // 2 x mean(0.5, 4.5 / 9)
}

TEST_CASE("event trigger averages the slope history", "[event][trigger]") {
  // History 3 keeps the first slope (4) in the mean: threshold (4 + 0.5 + 1) / 3 after pass 4.
  sccl::TensorTrigger trigger(adaptive(1.0, 3, 2));
  CHECK(eventPasses(trigger, kNorms) == std::vector<uint64_t>{0, 1, 4});
  CHECK(trigger.threshold() == Approx(5.5 / 3).epsilon(1e-15));
  // History 1: only the last slope counts.
  sccl::TensorTrigger last_only(adaptive(1.0, 1, 2));
  CHECK(eventPasses(last_only, kNorms) == std::vector<uint64_t>{0, 1, 2, 3, 5, 10});
  CHECK(last_only.threshold() == 0.2);  // 1.0 / 5 passes
}

TEST_CASE("event trigger static threshold compares every change with the constant",
          "[event][trigger]") {
  sccl::TriggerConfig c;
  c.adaptive = false;
  c.static_threshold = 0.75;
  c.initial_passes = 2;
  sccl::TensorTrigger trigger(c);
  CHECK(eventPasses(trigger, kNorms) == std::vector<uint64_t>{0, 1, 3, 4, 6, 8, 10});
  CHECK(trigger.threshold() == 0.75);
}

TEST_CASE("event trigger forces exactly the initial passes", "[event][trigger]") {
  sccl::TriggerConfig c;
  c.adaptive = false;
  c.static_threshold = 100.0;
  c.initial_passes = 3;
  sccl::TensorTrigger trigger(c);
  std::vector<double> constant(10, 2.0);
  CHECK(eventPasses(trigger, constant) == std::vector<uint64_t>{0, 1, 2});
  // No forced passes: a change below the threshold never fires, even the first.
  c.initial_passes = 0;
  sccl::TensorTrigger none(c);
  CHECK(eventPasses(none, constant).empty());
}

TEST_CASE("event trigger with threshold zero fires every pass", "[event][trigger]") {
  sccl::TensorTrigger horizon_zero(adaptive(0.0, 2, 0));
  std::vector<double> constant(7, 1.0);
  CHECK(eventPasses(horizon_zero, constant).size() == 7);
  sccl::TriggerConfig c;
  c.adaptive = false;
  c.initial_passes = 0;
  sccl::TensorTrigger static_zero(c);
  CHECK(eventPasses(static_zero, constant).size() == 7);
}

TEST_CASE("event trigger fires on a NaN norm", "[event][trigger]") {
  sccl::TriggerConfig c;
  c.adaptive = false;
  c.static_threshold = 1e9;
  c.initial_passes = 0;
  sccl::TensorTrigger trigger(c);
  CHECK_FALSE(trigger.decide(0, 1.0));
  CHECK(trigger.decide(1, std::numeric_limits<double>::quiet_NaN()));
}

TEST_CASE("event config defaults are the paper's", "[event][config]") {
  scclEventConfig_t c = SCCL_EVENT_CONFIG_INITIALIZER;
  sccl::ResolvedEventConfig r;
  REQUIRE(sccl::resolveEventConfig(c, &r) == scclSuccess);
  CHECK(r.trigger.adaptive);
  CHECK(r.trigger.horizon == 1.0);
  CHECK(r.trigger.history == 2);
  CHECK(r.trigger.initial_passes == 30);
  CHECK(r.synchronous);
}

TEST_CASE("event config from JSON applies every key", "[event][config]") {
  scclEventConfig_t c = SCCL_EVENT_CONFIG_INITIALIZER;
  REQUIRE(scclEventConfigFromJson(R"({"threshold": "static", "static_threshold": 0.001,
      "horizon": 2.5, "history": 4, "initial_passes": 0, "synchronous": false, "max_silent_passes": 25, "averaging": "differences"})",
                                  &c) == scclSuccess);
  CHECK(c.thresholdMode == scclEventThresholdStatic);
  CHECK(c.staticThreshold == 0.001);
  CHECK(c.horizon == 2.5);
  CHECK(c.history == 4);
  CHECK(c.initialPasses == 0);
  CHECK(c.synchronous == 0);
  CHECK(c.maxSilentPasses == 25);
  CHECK(c.averaging == scclEventAverageDifferences);
}

TEST_CASE("event config from JSON rejects bad keys and values and leaves the config untouched",
          "[event][config]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"horizon": -1})", "horizon"},
      {R"({"history": 0})", "history"},
      {R"({"initial_passes": -2})", "initial_passes"},
      {R"({"static_threshold": -0.5})", "static_threshold"},
      {R"({"threshold": "sometimes"})", "threshold"},
      {R"({"synchronous": 2})", "synchronous"},
      {R"({"max_silent_passes": -1})", "max_silent_passes"},
      {R"({"averaging": "median"})", "averaging"},
      {R"({"history": 2.5})", "history"},
      {R"({"horizon": "one"})", "horizon"},
      {R"({"treshold": "static"})", "treshold"},
  };
  for (const auto& [json, key] : cases) {
    INFO(json);
    scclEventConfig_t c = SCCL_EVENT_CONFIG_INITIALIZER;
    scclEventConfig_t before = c;
    CHECK(scclEventConfigFromJson(json.c_str(), &c) == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find("\"" + key + "\"") != std::string::npos);
    CHECK(std::memcmp(&c, &before, sizeof(c)) == 0);
  }
  scclEventConfig_t c = SCCL_EVENT_CONFIG_INITIALIZER;
  CHECK(scclEventConfigFromJson("[1, 2]", &c) == scclInvalidArgument);
  CHECK(scclEventConfigFromJson("{", &c) == scclInvalidArgument);
  CHECK(scclEventConfigFromJson(nullptr, &c) == scclInvalidArgument);
  CHECK(scclEventConfigFromJson("{}", nullptr) == scclInvalidArgument);
}

TEST_CASE("event trigger bounds the passes without an event when asked", "[event][trigger]") {
  // The paper's rule never sends a tensor whose norm stopped moving; max_silent_passes 4 sends it
  // every 4th pass after the last event, and a real event restarts the count.
  std::vector<double> norms = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
                               1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 5.0};
  sccl::TriggerConfig c;
  c.adaptive = false;
  c.static_threshold = 2.0;
  c.initial_passes = 1;
  sccl::TensorTrigger paper(c);
  CHECK(eventPasses(paper, norms) == std::vector<uint64_t>{0, 9});
  c.max_silent_passes = 4;
  sccl::TensorTrigger bounded(c);
  CHECK(eventPasses(bounded, norms) == std::vector<uint64_t>{0, 4, 8, 9, 13});
}
