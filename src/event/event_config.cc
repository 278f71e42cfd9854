#include "event/event_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "core/config_header.h"
#include "core/error.h"
#include "core/json_flag.h"

namespace sccl {
namespace {

using Json = nlohmann::json;

uint64_t mixWord(uint64_t hash, uint64_t word) {
  hash ^= word + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  return hash * 0xff51afd7ed558ccdull;
}

uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

scclResult_t wrongType(const char* key, const char* expected, const Json& value) {
  return fail(scclInvalidArgument, "event config key \"%s\" must be %s, not %s", key, expected,
              value.type_name());
}

using KeyApplier = std::function<scclResult_t(const Json&, scclEventConfig_t&)>;

KeyApplier number(const char* key, double scclEventConfig_t::*field) {
  return [=](const Json& value, scclEventConfig_t& config) -> scclResult_t {
    if (!value.is_number()) return wrongType(key, "a number", value);
    config.*field = value.get<double>();
    return scclSuccess;
  };
}

KeyApplier integer(const char* key, int scclEventConfig_t::*field) {
  return [=](const Json& value, scclEventConfig_t& config) -> scclResult_t {
    if (!value.is_number_integer()) return wrongType(key, "an integer", value);
    int64_t v = value.get<int64_t>();
    SCCL_REQUIRE_ARG(v >= INT32_MIN && v <= INT32_MAX,
                     "event config key \"%s\": %lld is out of range", key,
                     static_cast<long long>(v));
    config.*field = static_cast<int>(v);
    return scclSuccess;
  };
}

scclResult_t applyThresholdMode(const Json& value, scclEventConfig_t& config) {
  if (!value.is_string()) return wrongType("threshold", "a string", value);
  std::string text = value.get<std::string>();
  if (text == "adaptive") {
    config.thresholdMode = scclEventThresholdAdaptive;
  } else if (text == "static") {
    config.thresholdMode = scclEventThresholdStatic;
  } else {
    return fail(scclInvalidArgument,
                "event config key \"threshold\": '%s' is neither \"adaptive\" nor \"static\"",
                text.c_str());
  }
  return scclSuccess;
}

scclResult_t applySynchronous(const Json& value, scclEventConfig_t& config) {
  if (!readJsonFlag(value, &config.synchronous))
    return wrongType("synchronous", kJsonFlagForms, value);
  return scclSuccess;
}

scclResult_t applyAveraging(const Json& value, scclEventConfig_t& config) {
  if (!value.is_string()) return wrongType("averaging", "a string", value);
  std::string text = value.get<std::string>();
  if (text == "copies") {
    config.averaging = scclEventAverageCopies;
  } else if (text == "differences") {
    config.averaging = scclEventAverageDifferences;
  } else {
    return fail(scclInvalidArgument,
                "event config key \"averaging\": '%s' is neither \"copies\" nor \"differences\"",
                text.c_str());
  }
  return scclSuccess;
}

const std::map<std::string, KeyApplier>& keyAppliers() {
  static const std::map<std::string, KeyApplier> appliers = {
      {"threshold", applyThresholdMode},
      {"horizon", number("horizon", &scclEventConfig_t::horizon)},
      {"static_threshold", number("static_threshold", &scclEventConfig_t::staticThreshold)},
      {"history", integer("history", &scclEventConfig_t::history)},
      {"initial_passes", integer("initial_passes", &scclEventConfig_t::initialPasses)},
      {"synchronous", applySynchronous},
      {"max_silent_passes", integer("max_silent_passes", &scclEventConfig_t::maxSilentPasses)},
      {"averaging", applyAveraging},
  };
  return appliers;
}

// The field names resolveEventConfig puts first in its messages, mapped to JSON keys.
const char* jsonKeyForField(const std::string& message) {
  static const std::pair<const char*, const char*> fields[] = {
      {"thresholdMode", "threshold"},           {"horizon", "horizon"},
      {"staticThreshold", "static_threshold"},  {"history", "history"},
      {"initialPasses", "initial_passes"},      {"synchronous", "synchronous"},
      {"maxSilentPasses", "max_silent_passes"}, {"averaging", "averaging"}};
  for (const auto& [field, key] : fields) {
    if (message.rfind(field, 0) == 0) return key;
  }
  return nullptr;
}

}  // namespace

scclResult_t resolveEventConfig(const scclEventConfig_t& config, ResolvedEventConfig* out) {
  SCCL_REQUIRE_ARG(config.magic == SCCL_EVENT_CONFIG_MAGIC,
                   "event config was not made with SCCL_EVENT_CONFIG_INITIALIZER");
  // 0.1.0's struct ends at averaging (core/config_header.h).
  SCCL_CHECK(
      checkConfigVersionAndSize("event config", config.size, config.version,
                                offsetof(scclEventConfig_t, averaging) + sizeof(config.averaging),
                                sizeof(scclEventConfig_t)));
  // A caller compiled against an older header passes a shorter struct: missing fields default.
  scclEventConfig_t full = SCCL_EVENT_CONFIG_INITIALIZER;
  std::memcpy(&full, &config, config.size);
  int mode;
  std::memcpy(&mode, &full.thresholdMode, sizeof(mode));
  SCCL_REQUIRE_ARG(mode == scclEventThresholdAdaptive || mode == scclEventThresholdStatic,
                   "thresholdMode %d is neither adaptive (0) nor static (1)", mode);
  SCCL_REQUIRE_ARG(std::isfinite(full.horizon) && full.horizon >= 0,
                   "horizon %g must be finite and >= 0", full.horizon);
  SCCL_REQUIRE_ARG(std::isfinite(full.staticThreshold) && full.staticThreshold >= 0,
                   "staticThreshold %g must be finite and >= 0", full.staticThreshold);
  SCCL_REQUIRE_ARG(full.history >= 1 && full.history <= 1000000,
                   "history %d must be in [1, 1000000]", full.history);
  SCCL_REQUIRE_ARG(full.initialPasses >= 0, "initialPasses %d must be >= 0", full.initialPasses);
  SCCL_REQUIRE_ARG(full.synchronous == 0 || full.synchronous == 1, "synchronous %d must be 0 or 1",
                   full.synchronous);
  SCCL_REQUIRE_ARG(full.maxSilentPasses >= 0, "maxSilentPasses %d must be >= 0 (0: off)",
                   full.maxSilentPasses);
  int averaging;
  std::memcpy(&averaging, &full.averaging, sizeof(averaging));
  SCCL_REQUIRE_ARG(averaging == scclEventAverageCopies || averaging == scclEventAverageDifferences,
                   "averaging %d is neither copies (0) nor differences (1)", averaging);
  ResolvedEventConfig resolved;
  resolved.trigger.adaptive = mode == scclEventThresholdAdaptive;
  resolved.trigger.horizon = full.horizon;
  resolved.trigger.static_threshold = full.staticThreshold;
  resolved.trigger.history = full.history;
  resolved.trigger.initial_passes = full.initialPasses;
  resolved.synchronous = full.synchronous == 1;
  resolved.trigger.max_silent_passes = full.maxSilentPasses;
  resolved.average_differences = averaging == scclEventAverageDifferences;
  *out = resolved;
  return scclSuccess;
}

scclResult_t eventConfigFromJson(const char* text, scclEventConfig_t* config) {
  SCCL_REQUIRE_ARG(text != nullptr, "json text is NULL");
  SCCL_REQUIRE_ARG(config != nullptr, "config is NULL");
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return fail(scclInvalidArgument, "event config is not valid JSON");
  if (!document.is_object())
    return fail(scclInvalidArgument, "event config JSON must be an object");
  scclEventConfig_t updated = *config;
  for (const auto& [key, value] : document.items()) {
    auto applier = keyAppliers().find(key);
    if (applier == keyAppliers().end()) {
      return fail(scclInvalidArgument, "event config key \"%s\" is unknown", key.c_str());
    }
    SCCL_CHECK(applier->second(value, updated));
  }
  ResolvedEventConfig resolved;
  if (resolveEventConfig(updated, &resolved) != scclSuccess) {
    std::string message = threadLastError();
    const char* key = jsonKeyForField(message);
    if (key != nullptr) {
      return fail(scclInvalidArgument, "event config key \"%s\": %s", key, message.c_str());
    }
    return fail(scclInvalidArgument, "%s", message.c_str());
  }
  *config = updated;
  return scclSuccess;
}

uint64_t eventConfigFingerprint(const ResolvedEventConfig& config, uint64_t seed) {
  uint64_t h = seed;
  h = mixWord(h, config.trigger.adaptive ? 1 : 0);
  h = mixWord(h, bitsOf(config.trigger.horizon));
  h = mixWord(h, bitsOf(config.trigger.static_threshold));
  h = mixWord(h, static_cast<uint64_t>(config.trigger.history));
  h = mixWord(h, static_cast<uint64_t>(config.trigger.initial_passes));
  h = mixWord(h, config.synchronous ? 1 : 0);
  h = mixWord(h, static_cast<uint64_t>(config.trigger.max_silent_passes));
  h = mixWord(h, config.average_differences ? 1 : 0);
  return h;
}

std::string describeEventConfig(const ResolvedEventConfig& config) {
  char rule[96];
  if (config.trigger.adaptive) {
    std::snprintf(rule, sizeof(rule), "adaptive horizon %g history %d", config.trigger.horizon,
                  config.trigger.history);
  } else {
    std::snprintf(rule, sizeof(rule), "static threshold %g", config.trigger.static_threshold);
  }
  char text[240];
  std::snprintf(text, sizeof(text), "%s, %d initial passes, max silent passes %d, %s, %s", rule,
                config.trigger.initial_passes, config.trigger.max_silent_passes,
                config.synchronous ? "synchronous" : "asynchronous",
                config.average_differences ? "averaging differences" : "averaging copies");
  return text;
}

}  // namespace sccl
