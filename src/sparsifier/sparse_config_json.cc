// scclSparseConfigFromJson: a JSON object's keys applied over a scclSparseConfig_t. Every key is
// known, typed and range-checked; any error names the key and leaves the config untouched.
#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/error.h"
#include "core/json_flag.h"
#include "core/registry_names.h"
#include "sparsifier/sparse_config.h"
#include "estimators/threshold_estimator.h"
#include "partition/search_space.h"

namespace sccl {
namespace {

using Json = nlohmann::json;
using KeyApplier = std::function<scclResult_t(const Json&, scclSparseConfig_t&)>;

scclResult_t wrongType(const char* key, const char* expected, const Json& value) {
  return fail(scclInvalidArgument, "sparse config key \"%s\" must be %s, not %s", key, expected,
              value.type_name());
}

// String keys name registry entries; the config keeps the entry's static name.
template <typename Registry>
KeyApplier registryName(const char* key, const Registry& (*registry)(),
                        const char* scclSparseConfig_t::*field) {
  return [=](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    if (!value.is_string()) return wrongType(key, "a string", value);
    const std::string text = value.get<std::string>();
    for (const auto& entry : registry()) {
      if (text == entry.name) {
        config.*field = entry.name;
        return scclSuccess;
      }
    }
    return fail(scclInvalidArgument, "sparse config key \"%s\": '%s' is unknown (choose from: %s)",
                key, text.c_str(), registryNames(registry()).c_str());
  };
}

// "algorithm": a preset, or "auto" (the cost model chooses at creation).
KeyApplier algorithmName() {
  const KeyApplier preset =
      registryName("algorithm", presetRegistry, &scclSparseConfig_t::algorithm);
  return [=](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    if (value.is_string() && value.get<std::string>() == kAutoAlgorithm) {
      config.algorithm = kAutoAlgorithm;
      return scclSuccess;
    }
    return preset(value, config);
  };
}

KeyApplier number(const char* key, double scclSparseConfig_t::*field) {
  return [=](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    if (!value.is_number()) return wrongType(key, "a number", value);
    config.*field = value.get<double>();
    return scclSuccess;
  };
}

KeyApplier integer(const char* key, int scclSparseConfig_t::*field) {
  return [=](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    if (!value.is_number_integer()) return wrongType(key, "an integer", value);
    int64_t v = value.get<int64_t>();
    SCCL_REQUIRE_ARG(v >= INT32_MIN && v <= INT32_MAX,
                     "sparse config key \"%s\": %lld is out of range", key,
                     static_cast<long long>(v));
    config.*field = static_cast<int>(v);
    return scclSuccess;
  };
}

// A knob of an axis' table (core/knob_table.h): typed and range-checked here, by its row.
KeyApplier knob(const KnobDescriptor& row) {
  return [&row](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    if (row.integer ? !value.is_number_integer() : !value.is_number()) {
      return wrongType(row.key, row.integer ? "an integer" : "a number", value);
    }
    const double v = row.integer && value.is_number_unsigned()
                         ? static_cast<double>(value.get<uint64_t>())
                     : row.integer ? static_cast<double>(value.get<int64_t>())
                                   : value.get<double>();
    const std::string prefix = std::string("sparse config key \"") + row.key + "\": ";
    SCCL_CHECK(checkKnob(row, v, row.key, prefix.c_str()));
    row.write(config, v);
    return scclSuccess;
  };
}

// Boolean keys: true/false or 1/0 (core/json_flag.h).
KeyApplier flag(const char* key, int scclSparseConfig_t::*field) {
  return [=](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    int bit = 0;
    if (!readJsonFlag(value, &bit)) return wrongType(key, kJsonFlagForms, value);
    config.*field = bit;
    return scclSuccess;
  };
}

scclResult_t applyScalingRule(const Json& value, scclSparseConfig_t& config) {
  if (!value.is_string()) return wrongType("scaling_rule", "a string", value);
  std::string text = value.get<std::string>();
  if (text == "proportional") {
    config.scalingRule = "proportional";
  } else if (text == "band") {
    config.scalingRule = "band";
  } else {
    return fail(scclInvalidArgument,
                "sparse config key \"scaling_rule\": '%s' is neither \"proportional\" nor \"band\"",
                text.c_str());
  }
  return scclSuccess;
}

scclResult_t applyDensityCorrection(const Json& value, scclSparseConfig_t& config) {
  if (!value.is_string()) return wrongType("density_correction", "a string", value);
  std::string text = value.get<std::string>();
  if (text == "none") {
    config.densityCorrection = "none";
  } else if (text == "histogram") {
    config.densityCorrection = "histogram";
  } else {
    return fail(scclInvalidArgument,
                "sparse config key \"density_correction\": '%s' is neither \"none\" nor "
                "\"histogram\"",
                text.c_str());
  }
  return scclSuccess;
}

// A string key with a fixed set of values; the config keeps the static spelling.
KeyApplier choice(const char* key, const char* scclSparseConfig_t::*field,
                  std::vector<const char*> values) {
  return [=](const Json& value, scclSparseConfig_t& config) -> scclResult_t {
    if (!value.is_string()) return wrongType(key, "a string", value);
    const std::string text = value.get<std::string>();
    std::string allowed;
    for (const char* v : values) {
      if (text == v) {
        config.*field = v;
        return scclSuccess;
      }
      allowed += (allowed.empty() ? "\"" : ", \"") + std::string(v) + "\"";
    }
    return fail(scclInvalidArgument, "sparse config key \"%s\": '%s' is not one of %s", key,
                text.c_str(), allowed.c_str());
  };
}

scclResult_t applyNonFinite(const Json& value, scclSparseConfig_t& config) {
  if (!value.is_string()) return wrongType("non_finite", "a string", value);
  std::string text = value.get<std::string>();
  if (text == "propagate") {
    config.nonFinite = scclNonFinitePropagate;
  } else if (text == "error") {
    config.nonFinite = scclNonFiniteError;
  } else {
    return fail(scclInvalidArgument,
                "sparse config key \"non_finite\": '%s' is neither \"propagate\" nor \"error\"",
                text.c_str());
  }
  return scclSuccess;
}

// "density_warmup": {"start": s, "calls": N, "form": "exponential" | "linear"} (form optional).
scclResult_t applyDensityWarmup(const Json& value, scclSparseConfig_t& config) {
  if (!value.is_object()) return wrongType("density_warmup", "an object", value);
  scclSparseConfig_t updated = config;
  updated.densityWarmupForm = "exponential";
  bool has_start = false, has_calls = false;
  for (const auto& [key, item] : value.items()) {
    if (key == "start") {
      if (!item.is_number()) return wrongType("density_warmup.start", "a number", item);
      updated.densityWarmupStart = item.get<double>();
      has_start = true;
    } else if (key == "calls") {
      if (!item.is_number_integer()) return wrongType("density_warmup.calls", "an integer", item);
      const int64_t calls = item.get<int64_t>();
      SCCL_REQUIRE_ARG(calls >= 0 && calls <= INT32_MAX,
                       "sparse config key \"density_warmup.calls\": %lld is out of range",
                       static_cast<long long>(calls));
      updated.densityWarmupCalls = static_cast<int>(calls);
      has_calls = true;
    } else if (key == "form") {
      SCCL_CHECK(choice("density_warmup.form", &scclSparseConfig_t::densityWarmupForm,
                        {"exponential", "linear"})(item, updated));
    } else {
      return fail(scclInvalidArgument,
                  "sparse config key \"density_warmup\": \"%s\" is unknown (start, calls, form)",
                  key.c_str());
    }
  }
  SCCL_REQUIRE_ARG(has_start && has_calls,
                   "sparse config key \"density_warmup\" needs \"start\" and \"calls\"");
  config = updated;
  return scclSuccess;
}

std::map<std::string, KeyApplier> makeKeyAppliers() {
  std::map<std::string, KeyApplier> appliers = {
      {"algorithm", algorithmName()},
      {"estimator", registryName("estimator", estimatorRegistry, &scclSparseConfig_t::estimator)},
      {"search", registryName("search", searchSpaceRegistry, &scclSparseConfig_t::searchSpace)},
      {"reduction", registryName("reduction", reductionRegistry, &scclSparseConfig_t::reduction)},
      {"density", number("density", &scclSparseConfig_t::density)},
      {"error_feedback", flag("error_feedback", &scclSparseConfig_t::errorFeedback)},
      {"stream_ordered", flag("stream_ordered", &scclSparseConfig_t::streamOrdered)},
      {"non_finite", applyNonFinite},
      {"max_density_slack", number("max_density_slack", &scclSparseConfig_t::maxDensitySlack)},
      {"scaling_rule", applyScalingRule},
      {"density_correction", applyDensityCorrection},
      {"correction_bins_per_octave",
       integer("correction_bins_per_octave", &scclSparseConfig_t::correctionBinsPerOctave)},
      {"correction_octaves", integer("correction_octaves", &scclSparseConfig_t::correctionOctaves)},
      {"sketch_block_size", integer("sketch_block_size", &scclSparseConfig_t::sketchBlockSize)},
      {"sketch_block_selection",
       choice("sketch_block_selection", &scclSparseConfig_t::sketchBlockSelection,
              {"topk", "nonzero"})},
      {"sketch_rows", integer("sketch_rows", &scclSparseConfig_t::sketchRows)},
      {"sketch_lambda", number("sketch_lambda", &scclSparseConfig_t::sketchLambda)},
      {"sketch_seed", integer("sketch_seed", &scclSparseConfig_t::sketchSeed)},
      {"sketch_feedback", choice("sketch_feedback", &scclSparseConfig_t::sketchFeedback,
                                 {"unselected", "decode_error"})},
      {"density_warmup", applyDensityWarmup},
      {"hierarchy", choice("hierarchy", &scclSparseConfig_t::hierarchy, {"flat", "node"})},
  };
  for (const KnobGroup& group : sparseConfigKnobs()) {
    for (const KnobDescriptor& row : *group.knobs) appliers.emplace(row.key, knob(row));
  }
  return appliers;
}

const std::map<std::string, KeyApplier>& keyAppliers() {
  static const std::map<std::string, KeyApplier> appliers = makeKeyAppliers();
  return appliers;
}

// Maps a range error of the whole config back to the JSON key that caused it.
const char* jsonKeyForField(const std::string& message) {
  // Prefixes: the longer field names first ("densityWarmupStart" also starts with "density").
  static const std::pair<const char*, const char*> fields[] = {
      {"densityWarmup", "density_warmup"},
      {"densityCorrection", "density_correction"},
      {"density", "density"},
      {"errorFeedback", "error_feedback"},
      {"maxDensitySlack", "max_density_slack"},
      {"scalingRule", "scaling_rule"},
      {"densityCorrection", "density_correction"},
      {"correctionBinsPerOctave", "correction_bins_per_octave"},
      {"correctionOctaves", "correction_octaves"},
      {"sketchBlockSize", "sketch_block_size"},
      {"sketchBlockSelection", "sketch_block_selection"},
      {"sketchRows", "sketch_rows"},
      {"sketchLambda", "sketch_lambda"},
      {"sketchSeed", "sketch_seed"},
      {"sketchFeedback", "sketch_feedback"},
      {"streamOrdered", "stream_ordered"},
      {"hierarchy", "hierarchy"}};
  for (const auto& [field, key] : fields) {
    if (message.rfind(field, 0) == 0) return key;
  }
  for (const KnobGroup& group : sparseConfigKnobs()) {
    for (const KnobDescriptor& row : *group.knobs) {
      if (message.rfind(row.field, 0) == 0) return row.key;
    }
  }
  return nullptr;
}

}  // namespace

scclResult_t sparseConfigFromJson(const char* text, scclSparseConfig_t* config) {
  SCCL_REQUIRE_ARG(text != nullptr, "json text is NULL");
  SCCL_REQUIRE_ARG(config != nullptr, "config is NULL");
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return fail(scclInvalidArgument, "sparse config is not valid JSON");
  if (!document.is_object())
    return fail(scclInvalidArgument, "sparse config JSON must be an object");
  scclSparseConfig_t updated = *config;
  for (const auto& [key, value] : document.items()) {
    auto applier = keyAppliers().find(key);
    if (applier == keyAppliers().end()) {
      return fail(scclInvalidArgument, "sparse config key \"%s\" is unknown", key.c_str());
    }
    SCCL_CHECK(applier->second(value, updated));
  }
  // Range checks of the combined result, reported with the JSON key's name ("auto" has no
  // preset yet: its other settings are checked as dense's).
  scclSparseConfig_t checked = updated;
  if (checked.algorithm != nullptr && std::strcmp(checked.algorithm, kAutoAlgorithm) == 0)
    checked.algorithm = "dense";
  ResolvedSparseConfig resolved;
  if (resolveSparseConfig(checked, &resolved) != scclSuccess) {
    std::string message = threadLastError();
    const char* key = jsonKeyForField(message);
    if (key != nullptr) {
      return fail(scclInvalidArgument, "sparse config key \"%s\": %s", key, message.c_str());
    }
    return fail(scclInvalidArgument, "%s", message.c_str());
  }
  *config = updated;
  return scclSuccess;
}

}  // namespace sccl
