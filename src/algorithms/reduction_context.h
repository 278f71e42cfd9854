// What a reduction knows of the sparsifier that runs it, handed over explicitly: the sparsifier
// (src/sparsifier/, the layer above) builds a ReductionContext for each call, each preparation
// and each mask, and the reductions never include it. Two parts:
//  - the call's facts, read-only: communicator, sizes, types, config, the call number, k and the
//    fingerprint of this call, and the estimator and search space the reduction asks and
//    informs (those two keep their own state between calls);
//  - ReductionMemory, what the reductions keep between calls and the sparsifier owns for them:
//    the last call's per-rank counts, the union call's slot hint, the scratch arrays a host call
//    reuses, the reduction's own state, and the index list the sent-mask reads afterwards.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/host_staging.h"
#include "algorithms/resolved_config.h"
#include "core/aligned_buffer.h"
#include "estimators/threshold_estimator.h"
#include "partition/search_space.h"
#include "sparsecoll/sparsecoll.h"

struct scclComm;

namespace sccl {

// Kept between calls by the sparsifier on the reductions' behalf. A reset or a checkpoint load
// clears the parts that describe a call (rank counts, the slot hint); the scratch only grows.
struct ReductionMemory {
  std::vector<uint64_t> rank_counts;  // k_i of the last call
  // The largest count of the last union call with a threshold on device buffers
  // (algorithms/resident_union.cc), 0 before one: sizes the next one's slots, the same on every
  // rank. Not from rank_counts, which a dense flush or another preset's call sets.
  uint64_t union_slot_hint = 0;
  // Scratch of a call on host buffers, reused so that a training loop's steady state allocates
  // nothing; global_indices also carries the last call's list to the sent-mask.
  std::vector<int64_t> local_indices;
  std::vector<int64_t> gathered_indices;
  std::vector<int64_t> global_indices;
  AlignedBuffer values;
  // The density correction's candidates of the fused pass (algorithms/gather_selection.cc):
  // indices and values at or above the window's floor; the size is the pass's capacity.
  std::vector<int64_t> candidate_indices;
  AlignedBuffer candidate_values;
  // The kernels' memory of the calls written against the kernel interface when they run on host
  // buffers (the resident gather call, gather_reduction.cc; the S2 call, sketch_reduction.cc):
  // host memory, kept between calls; and the room of the gather pass's candidates (grows after
  // an overflow).
  HostStaging host_staging;
  size_t candidate_room = 0;
  // The reduction's own state (the sketch's shape and last union), built by its prepare.
  std::unique_ptr<ReductionState> reduction_state;
  // The calls that read nothing back (settled_call.h): the plan memory whose totals count them,
  // and the call number when they started (null: none yet, or reset, or a checkpoint loaded).
  const void* settled_plan = nullptr;
  uint64_t settled_first_call = 0;
};

// One reduction call's (or preparation's, or mask's) view of its sparsifier. Built by
// reductionContext (sparsifier/sparsifier.h) after the call's density is applied; valid while
// the sparsifier is and its preset unchanged.
struct ReductionContext {
  scclComm* comm = nullptr;
  size_t count = 0;
  scclDataType_t dtype = scclFloat32;      // gradient type
  scclDataType_t acc_dtype = scclFloat32;  // residual type: float32, or float64 for float64
  const ResolvedSparseConfig& config;
  const ReductionEntry& reduction;
  ThresholdEstimator& estimator;
  SearchSpace& search;
  uint64_t iteration = 0;    // the call's number since creation or reset
  uint64_t k_target = 1;     // this call's k
  uint64_t fingerprint = 0;  // this call's fingerprint (comm/call_agreement.h)
  // The highest density the buffers sized at creation allow (sync_free's capacity).
  double density_ceiling = 1;
  uint64_t last_k_local = 0;  // this rank's count at the last call (a selection's likely size)
  // ReductionMemory's parts, by name.
  std::vector<uint64_t>& rank_counts;
  uint64_t& union_slot_hint;
  std::vector<int64_t>& local_indices;
  std::vector<int64_t>& gathered_indices;
  std::vector<int64_t>& global_indices;
  AlignedBuffer& values;
  std::vector<int64_t>& candidate_indices;
  AlignedBuffer& candidate_values;
  HostStaging& host_staging;
  size_t& candidate_room;
  std::unique_ptr<ReductionState>& reduction_state;
  const void*& settled_plan;
  uint64_t& settled_first_call;
};

// Element size of the residual.
inline size_t accElementSize(const ReductionContext& ctx) {
  return ctx.acc_dtype == scclFloat64 ? 8 : 4;
}

}  // namespace sccl
