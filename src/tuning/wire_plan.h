// The collectives of one scclSparseAllreduce call, as the reductions issue them: what the cost
// model (tuning/cost_model.h) prices, and what its tests compare with the bytes the library counts.
//
// A plan is a function of the resolved config and of the call's shape: the counts that the
// reductions' statistics report (scclSparseStats_t kTarget, kGlobal, kMax). Given the shape a
// call actually had, the plan's bytes equal that call's bytesSent and bytesReceived exactly
// (tests/unit/test_cost_model.cc); given a shape predicted by tuning/call_shape.h, they are the
// prediction.
#pragma once

#include <cstdint>
#include <vector>

#include "core/collective_bytes.h"
#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"

namespace sccl {

struct CallShape {
  uint64_t count = 0;
  scclDataType_t dtype = scclFloat32;
  int nranks = 1;
  uint64_t k_target = 0;  // k of the call
  uint64_t k_global = 0;  // k': distinct entries whose values are all-reduced (gather)
  uint64_t k_max = 0;     // max over ranks of k_i (gather: entries; sketch: elements marked)
  uint64_t k_sole = 0;    // a sole selector's k (CLT-k's leader), broadcast to every rank
  // Sketch: elements the ranks' marked blocks cover together (what the decode walks); 0: unknown,
  // taken as nranks k_max (disjoint blocks, an upper bound). Not in the statistics; no bytes.
  uint64_t k_union = 0;
  // All-reduces of the density correction's bin counts in the call: 1, or 2 when the ranks held
  // fewer than k entries from the window's floor up and counted the whole window
  // (algorithms/density_correction.cc, step 2).
  int correction_rounds = 1;
};

enum class CollectiveKind { kAllGather, kAllReduce, kBroadcast };

struct PlannedCollective {
  CollectiveKind kind;
  // All-gather: bytes each rank contributes; all-reduce: the vector's bytes; broadcast: the
  // message's bytes.
  uint64_t bytes;
  const char* what;  // "header", "indices", "values", ...
};

// The collectives in the order the reduction issues them. Refuses nothing: the config was
// checked when it was resolved. With one rank the list is what the reduction calls (every
// collective then moves nothing).
std::vector<PlannedCollective> planCall(const ResolvedSparseConfig& config, const CallShape& shape);

// Whether the config's call runs the in-call density correction: its explicit setting, or where it
// is unset the preset's choice where that applies (the rule of sparsifier.cc's
// resolveDensityCorrection, for configs that no sparsifier resolved yet).
bool plansDensityCorrection(const ResolvedSparseConfig& config);

// Bytes this rank sends and receives for the plan (core/collective_bytes.h); a broadcast counts as
// sent on the root (is_broadcast_root) and received elsewhere.
WireBytes planWireBytes(const std::vector<PlannedCollective>& plan, int nranks,
                        bool is_broadcast_root);

const char* collectiveKindName(CollectiveKind kind);

// Entries this rank handles one at a time after the messages arrive: the indices it receives and
// the k' values it scatters (gather; the whole-vector search also its pairwise merge of the n
// lists, n max k_i ceil(log2 n)), the slots it scans and the values it writes
// (sync_free), the elements its sketch decode walks (sketch); 0 for dense. The cost model prices
// them per entry (LocalWork::seconds_per_entry): the part of the local work that grows with the
// rank count, which a one-rank calibration cannot see.
uint64_t planAggregatedEntries(const ResolvedSparseConfig& config, const CallShape& shape);

}  // namespace sccl
