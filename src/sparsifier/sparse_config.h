// The sparse configuration as the library uses it: the public scclSparseConfig_t checked, with
// the preset's axes filled in, and a fingerprint so that ranks can verify they agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/knob_table.h"
#include "estimators/estimator_knobs.h"
#include "partition/search_knobs.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

struct ResolvedSparseConfig {
  std::string algorithm;  // preset name
  std::string estimator;  // axis 1
  std::string search;     // axis 2
  std::string reduction;  // axis 3
  double density = 0.01;
  bool error_feedback = true;
  scclNonFinitePolicy_t non_finite = scclNonFinitePropagate;
  double max_density_slack = -1;
  EstimatorKnobs estimator_knobs;  // threshold, scaling, SIDCo and DGC knobs
  std::string scaling_rule = "proportional";
  SearchKnobs search_knobs;  // ExDyna's blocks and rebalancing
  // "none" or "histogram" once the sparsifier is built (empty until then: the preset's choice,
  // which applies only where it can, see sparsifier.cc).
  std::string density_correction;
  int correction_bins_per_octave = 256;
  int correction_octaves = 1;
  int sketch_block_size = 32;
  std::string sketch_block_selection = "topk";  // or "nonzero"
  int sketch_rows = 3;
  double sketch_lambda = 0.5;
  int sketch_seed = 0;
  std::string sketch_feedback = "unselected";  // or "decode_error"
  bool stream_ordered = false;                 // device calls enqueue everything, read nothing back
  // Density warm-up: the first warmup_calls calls move from warmup_start to density
  // (densityForCall); 0 calls: none.
  double warmup_start = 0;
  int warmup_calls = 0;
  std::string warmup_form = "exponential";  // or "linear"
  std::string hierarchy = "flat";            // or "node" (sparsifier/node_hierarchy.h)
};

// Every axis' numeric knobs (core/knob_table.h), in the order sccl_info prints them.
const std::vector<KnobGroup>& sparseConfigKnobs();

// Checks every field (scclInvalidArgument naming the field) and resolves the preset's axes.
scclResult_t resolveSparseConfig(const scclSparseConfig_t& config, ResolvedSparseConfig* out);

// FNV-1a of `bytes` bytes continuing from `hash` (the fingerprints' digest).
uint64_t mixHash(uint64_t hash, const void* data, size_t bytes);

// A 64-bit digest of everything that must be equal on every rank.
uint64_t sparseConfigFingerprint(const ResolvedSparseConfig& config, size_t count,
                                 scclDataType_t dtype);

// sparseConfigFingerprint of the config without its density schedule (density and warm-up), which
// a sparsifier checkpoint carries itself.
uint64_t checkpointFingerprint(const ResolvedSparseConfig& config, size_t count,
                               scclDataType_t dtype);

// The density of the call numbered `call` (0 = the first since creation or reset): the warm-up's
// s * (d/s)^(t/N) ("exponential") or s + (d - s) t/N ("linear") for t < N, else d = density.
double densityForCall(const ResolvedSparseConfig& config, uint64_t call);

// Text for logs and error messages, e.g. "exdyna(scaling, exdyna, gather) density 0.01".
std::string describeSparseConfig(const ResolvedSparseConfig& config);

}  // namespace sccl
