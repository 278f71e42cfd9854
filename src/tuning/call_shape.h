// The shape a call is expected to have (tuning/wire_plan.h CallShape) before it runs: what the cost
// model prices for a size, density and rank count that were never measured.
//
// What it assumes, per search space (ARCHITECTURE.md's axis 2):
//  - exclusive ranges (micro, exdyna): the ranks together select k' = k; the busiest rank
//    max k_i = gather_inflation k / n (the statistics' gatherInflation, 1 = balanced);
//  - the leader (CLT-k): the leader selects k, everyone else none, k' = k;
//  - the whole vector (topk, hard_threshold, sidco): each rank selects k, and the union is
//    k' = union_factor k, between 1 (every rank chose the same entries) and n (disjoint). Unset,
//    the union of n independent uniform choices: count (1 - (1 - d)^n), an upper bound for
//    gradients, whose large entries coincide across ranks. SIDCo too: its count check
//    (sidco_feedback > 0, the default) brings each rank's own selection to k (measured on the
//    emulated cluster, 2026-11-27: k' = 3.99 k at 4 ranks, 7.9 k at 8, independent inputs);
//  - the sketch (S2, "topk" blocks): the busiest rank marks ceil(k / B) whole blocks, and the
//    ranks' blocks together cover k_union elements (the union as for the whole vector).
// The sync_free reduction's messages do not depend on the shape (capacity is fixed).
#pragma once

#include <cstdint>

#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"
#include "tuning/wire_plan.h"

namespace sccl {

struct ShapeAssumptions {
  double gather_inflation = 1.0;  // n max(k_i) / k' for exclusive ranges, >= 1
  double union_factor = 0.0;      // k' / k for whole-vector selection; <= 0: independent ranks
};

CallShape predictCallShape(const ResolvedSparseConfig& config, uint64_t count,
                           scclDataType_t dtype, int nranks, const ShapeAssumptions& assumptions);

}  // namespace sccl
