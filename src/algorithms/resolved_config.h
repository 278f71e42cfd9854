// The sparse configuration resolved (sparsifier/sparse_config.h checks and resolves it): plain
// data, here below the sparsifier so that the reductions read the fields they need through their
// call context (algorithms/reduction_context.h) without including the sparsifier.
#pragma once

#include <string>

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
  std::string hierarchy = "flat";           // or "node" (sparsifier/node_hierarchy.h)
};

}  // namespace sccl
