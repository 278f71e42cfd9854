// The device-resident gather call: MiCRO and ExDyna (gather reduction, histogram density
// correction, exclusive search space) with indices, values and counts in the kernels' memory and
// one read-back per call (resident_gather.cc has the steps and bytes).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"

namespace sccl {

// Whether the sparsifier's call can run resident: the gather reduction over an exclusive search
// space, where either every rank selects with the histogram density correction or a threshold
// known before the data (max_density_slack: the plan caps the counts, a rank past the cap sends
// its largest), or one rank selects alone with the exact top-k (CLT-k's leader, without
// max_density_slack).
bool residentGatherApplies(const ReductionContext& ctx);

// One call on call.kernels / call.device / call.stream (set), accumulator and residual in
// `vectors` (vectors.fault: the sparsifier's index-check word, kNoIndexFault when created), the
// collectives through `exchange`. On return call holds the counts and bytes; the residual swap is
// the caller's (runStagedCall), followed by restoreAfterFault.
// pass_candidates: the kernels' fused pass keeps candidates (the CPU backend's, which selects
// while it accumulates and reports their count to the host at once: host buffers,
// runGatherReduction): the pass counts from the density correction's floor edge up and keeps every
// entry there (or at a threshold known before the data), and the plan's threshold selects among
// them without reading the range again (resident_gather.cc, "Candidates").
scclResult_t runResidentGather(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors,
                               bool pass_candidates = false);

// The statistics of CLT-k's calls that read nothing back (the leader's k-th magnitude as the
// threshold, adopted by the estimator as the host run adopts it; the non-finite count and the
// mean density error), into *stats; nothing before the first such call. Waits for `staging`.
scclResult_t residentLeaderStats(const ReductionContext& ctx, DeviceStaging& staging,
                                 scclSparseStats_t* stats);

// After the swap of a completed call: if a peer's indices failed their check (vectors.fault), the
// residual the call started from is put back (the device decides; the host does not wait).
scclResult_t restoreAfterFault(const SparseCall& call, StagedVectors& vectors);

}  // namespace sccl
