// scclSparseConfig_t and scclSparseConfigFromJson: defaults, every key, and errors that name
// the key while leaving the config untouched.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "sparsecoll/sparsecoll.h"

namespace {

std::string lastError() {
  return scclGetLastError(nullptr);
}

}  // namespace

TEST_CASE("the sparse config initializer holds the reference defaults", "[sparse][config]") {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  CHECK(std::string(config.algorithm) == "exdyna");
  CHECK(config.estimator == nullptr);
  CHECK(config.density == 0.01);
  CHECK(config.errorFeedback == 1);
  CHECK(config.scalingBand == 1.1);
  CHECK(config.scalingStep == 0.005);
  CHECK(config.numBlocks == 1024);
  CHECK(config.blockAlign == 32);
  CHECK(config.rebalanceAlpha == 1.05);
  CHECK(config.rebalanceMoveBlocks == 1);
  CHECK(config.minBlocksFactor == 0.25);
  CHECK(config.densityCorrection == nullptr);
  CHECK(config.correctionBinsPerOctave == 256);
  CHECK(config.correctionOctaves == 1);
  CHECK(config.threshold < 0);
  CHECK(config.maxDensitySlack < 0);
}

TEST_CASE("JSON sets every key of the sparse config", "[sparse][config]") {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  const char* json = R"({"algorithm": "micro", "estimator": "fixed", "search": "exdyna",
      "reduction": "gather", "density": 0.001, "error_feedback": false, "non_finite": "error",
      "max_density_slack": 0.25, "threshold": 0.5, "scaling_band": 1.2, "scaling_step": 0.01,
      "num_blocks": 512, "block_align": 16, "rebalance_alpha": 1.1, "rebalance_move_blocks": 2,
      "min_blocks_factor": 0.5, "density_correction": "none", "correction_bins_per_octave": 64,
      "correction_octaves": 3})";
  REQUIRE(scclSparseConfigFromJson(json, &config) == scclSuccess);
  CHECK(std::string(config.algorithm) == "micro");
  CHECK(std::string(config.estimator) == "fixed");
  CHECK(std::string(config.searchSpace) == "exdyna");
  CHECK(std::string(config.reduction) == "gather");
  CHECK(config.density == 0.001);
  CHECK(config.errorFeedback == 0);
  CHECK(config.nonFinite == scclNonFiniteError);
  CHECK(config.maxDensitySlack == 0.25);
  CHECK(config.threshold == 0.5);
  CHECK(config.scalingBand == 1.2);
  CHECK(config.scalingStep == 0.01);
  CHECK(config.numBlocks == 512);
  CHECK(config.blockAlign == 16);
  CHECK(config.rebalanceAlpha == 1.1);
  CHECK(config.rebalanceMoveBlocks == 2);
  CHECK(config.minBlocksFactor == 0.5);
  CHECK(std::string(config.densityCorrection) == "none");
  CHECK(config.correctionBinsPerOctave == 64);
  CHECK(config.correctionOctaves == 3);
}

TEST_CASE("JSON errors name the key and change nothing", "[sparse][config][errors]") {
  struct Case {
    const char* json;
    const char* must_mention;
  };
  const Case cases[] = {
      {R"({"algorithm": "best-one"})", "algorithm"},
      {R"({"estimator": "magic"})", "estimator"},
      {R"({"search": "everywhere"})", "search"},
      {R"({"densty": 0.1})", "densty"},
      {R"({"density": 0})", "density"},
      {R"({"density": 1.5})", "density"},
      {R"({"density": "high"})", "density"},
      {R"({"num_blocks": 0})", "num_blocks"},
      {R"({"num_blocks": 1.5})", "num_blocks"},
      {R"({"block_align": -3})", "block_align"},
      {R"({"rebalance_alpha": 0.9})", "rebalance_alpha"},
      {R"({"scaling_band": 1.0})", "scaling_band"},
      {R"({"scaling_step": 1.0})", "scaling_step"},
      {R"({"min_blocks_factor": -1})", "min_blocks_factor"},
      {R"({"non_finite": "ignore"})", "non_finite"},
      {R"({"error_feedback": 2})", "error_feedback"},
      {R"({"rebalance_move_blocks": 0})", "rebalance_move_blocks"},
      {R"({"density_correction": "exact"})", "density_correction"},
      {R"({"density_correction": 1})", "density_correction"},
      {R"({"correction_bins_per_octave": 100})", "correction_bins_per_octave"},
      {R"({"correction_bins_per_octave": 0})", "correction_bins_per_octave"},
      {R"({"correction_bins_per_octave": 8192})", "correction_bins_per_octave"},
      {R"({"correction_octaves": 0})", "correction_octaves"},
      {R"({"correction_octaves": 17})", "correction_octaves"},
      {R"([1, 2])", "object"},
      {R"({"density": )", "JSON"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
    scclSparseConfig_t before = config;
    CHECK(scclSparseConfigFromJson(c.json, &config) == scclInvalidArgument);
    CHECK(lastError().find(c.must_mention) != std::string::npos);
    CHECK(std::memcmp(&config, &before, sizeof(config)) == 0);
  }
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  CHECK(scclSparseConfigFromJson(nullptr, &config) == scclInvalidArgument);
  CHECK(scclSparseConfigFromJson("{}", nullptr) == scclInvalidArgument);
}

TEST_CASE("JSON can combine axes across presets", "[sparse][config]") {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  REQUIRE(scclSparseConfigFromJson(R"({"algorithm": "hard_threshold", "search": "micro"})",
                                   &config) == scclSuccess);
  CHECK(std::string(config.searchSpace) == "micro");
}
