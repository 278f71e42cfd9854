#include "sparsifier/sparse_config.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/algorithm.h"
#include "core/config_header.h"
#include "core/error.h"
#include "core/registry_names.h"
#include "estimators/threshold_estimator.h"
#include "partition/search_space.h"

namespace sccl {
namespace {

// An axis: the caller's choice if given, else the preset's; either way it must be registered.
template <typename Registry>
scclResult_t resolveAxis(const char* field, const char* chosen, const char* preset_default,
                         const Registry& registry, std::string* out) {
  std::string name = chosen != nullptr ? chosen : preset_default;
  if (!registryHas(registry, name)) {
    return fail(scclInvalidArgument, "sparse config %s '%s' is unknown (choose from: %s)", field,
                name.c_str(), registryNames(registry).c_str());
  }
  *out = std::move(name);
  return scclSuccess;
}

scclResult_t checkHeader(const scclSparseConfig_t& config) {
  SCCL_REQUIRE_ARG(config.magic == SCCL_SPARSE_CONFIG_MAGIC,
                   "sparse config was not initialised with SCCL_SPARSE_CONFIG_INITIALIZER");
  // 0.1.0's struct ends at streamOrdered (core/config_header.h).
  SCCL_CHECK(checkConfigVersionAndSize(
      "sparse config", config.size, config.version,
      offsetof(scclSparseConfig_t, streamOrdered) + sizeof(config.streamOrdered),
      sizeof(scclSparseConfig_t)));
  return scclSuccess;
}

scclResult_t checkRanges(const scclSparseConfig_t& c) {
  SCCL_REQUIRE_ARG(c.density > 0 && c.density <= 1, "density %g must be in (0, 1]", c.density);
  SCCL_REQUIRE_ARG(c.errorFeedback == 0 || c.errorFeedback == 1, "errorFeedback %d must be 0 or 1",
                   c.errorFeedback);
  int policy = 0;
  std::memcpy(&policy, &c.nonFinite, sizeof(policy));
  SCCL_REQUIRE_ARG(policy == scclNonFinitePropagate || policy == scclNonFiniteError,
                   "nonFinite %d is not a scclNonFinitePolicy_t", policy);
  SCCL_REQUIRE_ARG(!std::isnan(c.maxDensitySlack), "maxDensitySlack is NaN");
  // The axes' knobs, named by their field as the C caller wrote them (the JSON reader names keys).
  for (const KnobGroup& group : sparseConfigKnobs()) {
    for (const KnobDescriptor& knob : *group.knobs) {
      SCCL_CHECK(checkKnob(knob, knob.read(c), knob.field));
    }
  }
  SCCL_REQUIRE_ARG(c.scalingRule != nullptr && (std::strcmp(c.scalingRule, "proportional") == 0 ||
                                                std::strcmp(c.scalingRule, "band") == 0),
                   "scalingRule must be \"proportional\" or \"band\"");
  SCCL_REQUIRE_ARG(c.densityCorrection == nullptr ||
                       std::strcmp(c.densityCorrection, "none") == 0 ||
                       std::strcmp(c.densityCorrection, "histogram") == 0,
                   "densityCorrection must be NULL, \"none\" or \"histogram\"");
  const int bins = c.correctionBinsPerOctave;
  SCCL_REQUIRE_ARG(bins >= 1 && bins <= 4096 && (bins & (bins - 1)) == 0,
                   "correctionBinsPerOctave %d must be a power of 2 in [1, 4096]", bins);
  SCCL_REQUIRE_ARG(c.correctionOctaves >= 1 && c.correctionOctaves <= 16,
                   "correctionOctaves %d must be in [1, 16]", c.correctionOctaves);
  SCCL_REQUIRE_ARG(c.sketchBlockSize >= 1, "sketchBlockSize %d must be >= 1", c.sketchBlockSize);
  SCCL_REQUIRE_ARG(
      c.sketchBlockSelection != nullptr && (std::strcmp(c.sketchBlockSelection, "topk") == 0 ||
                                            std::strcmp(c.sketchBlockSelection, "nonzero") == 0),
      "sketchBlockSelection must be \"topk\" or \"nonzero\"");
  SCCL_REQUIRE_ARG(c.sketchRows >= 1 && c.sketchRows <= 16, "sketchRows %d must be in [1, 16]",
                   c.sketchRows);
  SCCL_REQUIRE_ARG(c.sketchLambda > 0 && c.sketchLambda <= 64, "sketchLambda %g must be in (0, 64]",
                   c.sketchLambda);
  SCCL_REQUIRE_ARG(c.sketchSeed >= 0, "sketchSeed %d must be >= 0", c.sketchSeed);
  SCCL_REQUIRE_ARG(
      c.sketchFeedback != nullptr && (std::strcmp(c.sketchFeedback, "unselected") == 0 ||
                                      std::strcmp(c.sketchFeedback, "decode_error") == 0),
      "sketchFeedback must be \"unselected\" or \"decode_error\"");
  SCCL_REQUIRE_ARG(c.hierarchy == nullptr || std::strcmp(c.hierarchy, "flat") == 0 ||
                       std::strcmp(c.hierarchy, "node") == 0,
                   "hierarchy must be NULL, \"flat\" or \"node\"");
  SCCL_REQUIRE_ARG(c.streamOrdered == 0 || c.streamOrdered == 1, "streamOrdered %d must be 0 or 1",
                   c.streamOrdered);
  SCCL_REQUIRE_ARG(c.densityWarmupCalls >= 0, "densityWarmupCalls %d must be >= 0 (0: no warm-up)",
                   c.densityWarmupCalls);
  SCCL_REQUIRE_ARG(
      c.densityWarmupCalls == 0 || (c.densityWarmupStart > 0 && c.densityWarmupStart <= 1),
      "densityWarmupStart %g must be in (0, 1] with densityWarmupCalls %d", c.densityWarmupStart,
      c.densityWarmupCalls);
  SCCL_REQUIRE_ARG(
      c.densityWarmupForm != nullptr && (std::strcmp(c.densityWarmupForm, "exponential") == 0 ||
                                         std::strcmp(c.densityWarmupForm, "linear") == 0),
      "densityWarmupForm must be \"exponential\" or \"linear\"");
  return scclSuccess;
}

// The stream-ordered call computes ranges, updates the threshold and moves ExDyna's partitions on
// the device, so it runs the sync_free reduction over MiCRO's or ExDyna's partitions with the
// scaling or fixed estimator only (the estimators that fit the call's data run on the host).
scclResult_t checkStreamOrdered(const ResolvedSparseConfig& c) {
  if (!c.stream_ordered) return scclSuccess;
  if (c.reduction != "sync_free" || (c.search != "micro" && c.search != "exdyna") ||
      (c.estimator != "scaling" && c.estimator != "fixed")) {
    return fail(scclInvalidArgument,
                "streamOrdered needs the sync_free reduction, the micro or exdyna search space "
                "and the scaling or fixed estimator (presets micro_sync_free, exdyna_sync_free); "
                "this config has reduction "
                "'%s', search '%s', estimator '%s'",
                c.reduction.c_str(), c.search.c_str(), c.estimator.c_str());
  }
  return scclSuccess;
}

}  // namespace

scclResult_t resolveSparseConfig(const scclSparseConfig_t& given, ResolvedSparseConfig* out) {
  SCCL_CHECK(checkHeader(given));
  // A config from an older header is shorter: the fields it lacks keep this header's defaults,
  // and nothing past its `size` is read.
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  std::memcpy(&config, &given, std::min(given.size, sizeof(scclSparseConfig_t)));
  SCCL_REQUIRE_ARG(config.algorithm != nullptr, "sparse config algorithm is NULL");
  SCCL_REQUIRE_ARG(std::strcmp(config.algorithm, kAutoAlgorithm) != 0,
                   "sparse config algorithm \"auto\" is chosen by scclSparsifierCreate; this "
                   "call needs a preset");
  const PresetEntry* preset = findPreset(config.algorithm);
  if (preset == nullptr) {
    return fail(scclInvalidArgument, "sparse config algorithm '%s' is unknown (choose from: %s)",
                config.algorithm, registryNames(presetRegistry()).c_str());
  }
  SCCL_CHECK(checkRanges(config));
  ResolvedSparseConfig resolved;
  resolved.algorithm = preset->name;
  SCCL_CHECK(resolveAxis("estimator", config.estimator, preset->estimator, estimatorRegistry(),
                         &resolved.estimator));
  SCCL_CHECK(resolveAxis("searchSpace", config.searchSpace, preset->search, searchSpaceRegistry(),
                         &resolved.search));
  SCCL_CHECK(resolveAxis("reduction", config.reduction, preset->reduction, reductionRegistry(),
                         &resolved.reduction));
  resolved.density = config.density;
  resolved.error_feedback = config.errorFeedback == 1;
  resolved.non_finite = config.nonFinite;
  resolved.max_density_slack = config.maxDensitySlack;
  resolved.estimator_knobs = knobsFrom<EstimatorKnobs>(config);
  resolved.scaling_rule = config.scalingRule;
  resolved.search_knobs = knobsFrom<SearchKnobs>(config);
  if (config.densityCorrection != nullptr) resolved.density_correction = config.densityCorrection;
  resolved.correction_bins_per_octave = config.correctionBinsPerOctave;
  resolved.correction_octaves = config.correctionOctaves;
  resolved.sketch_block_size = config.sketchBlockSize;
  resolved.sketch_block_selection = config.sketchBlockSelection;
  resolved.sketch_rows = config.sketchRows;
  resolved.sketch_lambda = config.sketchLambda;
  resolved.sketch_seed = config.sketchSeed;
  resolved.sketch_feedback = config.sketchFeedback;
  resolved.stream_ordered = config.streamOrdered == 1;
  if (config.densityWarmupCalls > 0) {
    resolved.warmup_start = config.densityWarmupStart;
    resolved.warmup_calls = config.densityWarmupCalls;
    resolved.warmup_form = config.densityWarmupForm;
  }
  if (config.hierarchy != nullptr) resolved.hierarchy = config.hierarchy;
  SCCL_CHECK(checkStreamOrdered(resolved));
  SCCL_REQUIRE_ARG(resolved.hierarchy == "flat" || !resolved.stream_ordered,
                   "hierarchy \"node\" runs host-ordered calls; streamOrdered needs hierarchy "
                   "\"flat\"");
  SCCL_REQUIRE_ARG(resolved.warmup_calls == 0 || resolved.reduction != "sketch",
                   "densityWarmupCalls %d: the sketch reduction (s2) sizes its sketch from the "
                   "density at creation and cannot change it",
                   resolved.warmup_calls);
  *out = std::move(resolved);
  return scclSuccess;
}

const std::vector<KnobGroup>& sparseConfigKnobs() {
  static const std::vector<KnobGroup> groups = {{"estimator", &knobTable<EstimatorKnobs>()},
                                                {"search space", &knobTable<SearchKnobs>()}};
  return groups;
}

uint64_t mixHash(uint64_t hash, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;  // FNV-1a
  return hash;
}

uint64_t sparseConfigFingerprint(const ResolvedSparseConfig& c, size_t count,
                                 scclDataType_t dtype) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const std::string* text :
       {&c.algorithm, &c.estimator, &c.search, &c.reduction, &c.scaling_rule, &c.density_correction,
        &c.sketch_block_selection, &c.sketch_feedback, &c.warmup_form, &c.hierarchy}) {
    hash = mixHash(hash, text->data(), text->size() + 1);
  }
  const double reals[] = {c.density, c.max_density_slack, c.sketch_lambda, c.warmup_start};
  const int64_t integers[] = {static_cast<int64_t>(count),
                              static_cast<int64_t>(dtype),
                              c.error_feedback,
                              static_cast<int64_t>(c.non_finite),
                              c.correction_bins_per_octave,
                              c.correction_octaves,
                              c.sketch_block_size,
                              c.sketch_rows,
                              c.sketch_seed,
                              c.stream_ordered,
                              c.warmup_calls};
  hash = mixHash(hash, reals, sizeof(reals));
  hash = mixHash(hash, integers, sizeof(integers));
  // The axes' knobs as doubles (exact for their int fields).
  for (const std::vector<double>& knobs :
       {knobValues<EstimatorKnobs>(c.estimator_knobs), knobValues<SearchKnobs>(c.search_knobs)}) {
    hash = mixHash(hash, knobs.data(), knobs.size() * sizeof(double));
  }
  return hash;
}

uint64_t checkpointFingerprint(const ResolvedSparseConfig& config, size_t count,
                               scclDataType_t dtype) {
  ResolvedSparseConfig schedule_free = config;
  schedule_free.density = 0;
  schedule_free.warmup_calls = 0;
  schedule_free.warmup_start = 0;
  schedule_free.warmup_form.clear();
  return sparseConfigFingerprint(schedule_free, count, dtype);
}

double densityForCall(const ResolvedSparseConfig& c, uint64_t call) {
  if (c.warmup_calls <= 0 || call >= uint64_t(c.warmup_calls)) return c.density;
  const double s = c.warmup_start;
  const double progress = double(call) / double(c.warmup_calls);  // t / N in [0, 1)
  const double d = c.warmup_form == "linear" ? s + (c.density - s) * progress
                                             : s * std::pow(c.density / s, progress);
  return std::clamp(d, std::min(s, c.density), std::max(s, c.density));
}

std::string describeSparseConfig(const ResolvedSparseConfig& c) {
  char text[256];
  std::snprintf(text, sizeof(text), "%s(estimator %s, search %s, reduction %s) density %g%s",
                c.algorithm.c_str(), c.estimator.c_str(), c.search.c_str(), c.reduction.c_str(),
                c.density, c.hierarchy == "node" ? ", hierarchy node" : "");
  return text;
}

}  // namespace sccl
