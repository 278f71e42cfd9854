// Each reduction's collectives, transcribed from the steps its file documents (the "Bytes per
// rank" paragraph at the top of algorithms/*_reduction.cc). When a reduction changes what it sends,
// this file changes with it: tests/unit/test_cost_model.cc runs every preset and compares the
// counted bytes with the plan of the shape each call reported.
#include "tuning/wire_plan.h"

#include <algorithm>
#include <cstring>

#include "algorithms/algorithm.h"
#include "algorithms/call_header.h"
#include "algorithms/reductions.h"
#include "algorithms/sync_free_capacity.h"
#include "core/dtype.h"
#include "kernels/shared/sync_free_slot_check.h"
#include "kernels/shared/union_plan.h"

namespace sccl {
namespace {

// The residual's element: float64 data accumulates in float64, every other type in float32
// (sparsifier.h accElementSize).
uint64_t accumulatorBytes(scclDataType_t dtype) {
  return dtype == scclFloat64 ? 8 : 4;
}

uint64_t correctionCountBytes(const ResolvedSparseConfig& c) {
  const uint64_t bins = 2 * uint64_t(c.correction_octaves) * uint64_t(c.correction_bins_per_octave);
  return (bins + 1) * sizeof(uint64_t);
}

// Which call a gather config runs on host buffers (algorithms/gather_reduction.cc): the resident
// gather where residentGatherApplies (the host reduction's collectives), else the union call where
// residentUnionApplies: every rank selecting, without max_density_slack. Its slots carry each
// rank's header and indices, padded to the largest count.
bool plansUnionSlots(const ResolvedSparseConfig& c, const CallShape& s) {
  if (c.search == "leader" || c.max_density_slack >= 0 || plansDensityCorrection(c)) return false;
  const bool exclusive = c.search != "whole" || s.nranks == 1;
  const bool threshold_before_data = c.estimator == "fixed" || c.estimator == "scaling";
  return !(exclusive && threshold_before_data);  // else the resident gather
}

void planGather(const ResolvedSparseConfig& c, const CallShape& s,
                std::vector<PlannedCollective>* plan) {
  if (plansUnionSlots(c, s)) {
    // A threshold's counts follow from the data: the headers go first (slots of no index), then
    // the slots at the largest count; top-k's counts are known before it.
    if (c.estimator != "topk") {
      plan->push_back(
          {CollectiveKind::kAllGather, unionSlotWords(0) * sizeof(uint64_t), "headers"});
    }
    if (c.estimator == "topk" || s.k_max > 0) {
      plan->push_back(
          {CollectiveKind::kAllGather, unionSlotWords(s.k_max) * sizeof(uint64_t), "slots"});
    }
    if (s.k_global > 0) {
      plan->push_back(
          {CollectiveKind::kAllReduce, s.k_global * accumulatorBytes(s.dtype), "values"});
    }
    return;
  }
  if (plansDensityCorrection(c)) {
    for (int round = 0; round < s.correction_rounds; ++round)
      plan->push_back({CollectiveKind::kAllReduce, correctionCountBytes(c), "correction counts"});
  }
  plan->push_back({CollectiveKind::kAllGather, sizeof(CallHeader), "header"});
  if (c.search == "leader") {
    plan->push_back({CollectiveKind::kBroadcast, s.k_sole * sizeof(int64_t), "indices"});
  } else if (s.k_max > 0) {
    plan->push_back({CollectiveKind::kAllGather, s.k_max * sizeof(int64_t), "indices"});
  }
  if (s.k_global > 0) {
    plan->push_back(
        {CollectiveKind::kAllReduce, s.k_global * accumulatorBytes(s.dtype), "values"});
  }
}

void planSyncFree(const ResolvedSparseConfig& c, const CallShape& s,
                  std::vector<PlannedCollective>* plan) {
  const uint64_t capacity = syncFreeCapacity(s.k_target, s.nranks, c.max_density_slack, s.count);
  plan->push_back(
      {CollectiveKind::kAllGather, (kSlotHeaderWords + capacity) * sizeof(int64_t), "slots"});
  plan->push_back({CollectiveKind::kAllReduce,
                   uint64_t(s.nranks) * capacity * accumulatorBytes(s.dtype), "values"});
}

void planSketch(const ResolvedSparseConfig& c, const CallShape& s,
                std::vector<PlannedCollective>* plan) {
  const uint64_t width = sketchTableWidth(c, s.k_target, s.k_max);
  const uint64_t block = uint64_t(c.sketch_block_size);
  const uint64_t blocks = (s.count + block - 1) / block;
  plan->push_back({CollectiveKind::kAllGather, sizeof(CallHeader), "header"});
  plan->push_back({CollectiveKind::kAllReduce,
                   uint64_t(c.sketch_rows) * width * accumulatorBytes(s.dtype), "sketch table"});
  if (blocks > 0) plan->push_back({CollectiveKind::kAllReduce, blocks, "block bitmap"});
}

// The whole-vector search's index lists overlap, so algorithms/index_exchange.cc merges the n
// ascending lists pairwise: ceil(log2 n) rounds, each moving every entry once. This is the part
// of Top-k's and SIDCo's local work that grows faster than the rank count (emulated cluster, 1M
// float32, d 0.1: their other phase grew 4.8-7.4x from 4 to 8 ranks over seven runs, micro's
// and exdyna's 1.5-2.3x). The exclusive searches' lists are disjoint and only appended.
uint64_t mergedEntries(const ResolvedSparseConfig& c, const CallShape& s) {
  if (c.search != "whole" || s.nranks < 2) return 0;
  uint64_t rounds = 0;
  while ((uint64_t{1} << rounds) < uint64_t(s.nranks)) ++rounds;
  return uint64_t(s.nranks) * s.k_max * rounds;
}

}  // namespace

bool plansDensityCorrection(const ResolvedSparseConfig& c) {
  if (!c.density_correction.empty()) return c.density_correction == "histogram";
  const PresetEntry* preset = findPreset(c.algorithm.c_str());
  const bool wanted =
      preset != nullptr && std::strcmp(preset->density_correction, "histogram") == 0;
  const bool exclusive = c.search == "micro" || c.search == "exdyna";
  return wanted && c.reduction == "gather" && exclusive && c.estimator == "scaling";
}

std::vector<PlannedCollective> planCall(const ResolvedSparseConfig& c, const CallShape& s) {
  std::vector<PlannedCollective> plan;
  if (c.reduction == "dense") {
    plan.push_back({CollectiveKind::kAllGather, sizeof(CallHeader), "header"});
    plan.push_back({CollectiveKind::kAllReduce, s.count * dataTypeSize(s.dtype), "gradient"});
  } else if (c.reduction == "gather") {
    planGather(c, s, &plan);
  } else if (c.reduction == "sync_free") {
    planSyncFree(c, s, &plan);
  } else if (c.reduction == "sketch") {
    planSketch(c, s, &plan);
  }
  return plan;
}

WireBytes planWireBytes(const std::vector<PlannedCollective>& plan, int nranks,
                        bool is_broadcast_root) {
  WireBytes total;
  for (const PlannedCollective& step : plan) {
    WireBytes b;
    switch (step.kind) {
      case CollectiveKind::kAllGather: b = allGatherWireBytes(step.bytes, nranks); break;
      case CollectiveKind::kAllReduce: b = allReduceWireBytes(step.bytes, nranks); break;
      case CollectiveKind::kBroadcast:
        b = broadcastWireBytes(step.bytes, nranks, is_broadcast_root);
        break;
    }
    total.sent += b.sent;
    total.received += b.received;
  }
  return total;
}

uint64_t planAggregatedEntries(const ResolvedSparseConfig& c, const CallShape& s) {
  const uint64_t others = s.nranks > 1 ? uint64_t(s.nranks - 1) : 0;
  if (c.reduction == "gather") {
    const uint64_t received = c.search == "leader" ? s.k_sole : others * s.k_max;
    return received + s.k_global + mergedEntries(c, s);
  }
  if (c.reduction == "sync_free") {
    const uint64_t capacity =
        syncFreeCapacity(s.k_target, s.nranks, c.max_density_slack, s.count);
    return uint64_t(s.nranks) * capacity + others * capacity;
  }
  if (c.reduction == "sketch") {
    return s.k_union > 0 ? s.k_union
                         : std::min<uint64_t>(s.count, uint64_t(std::max(1, s.nranks)) * s.k_max);
  }
  return 0;
}

const char* collectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kBroadcast: return "broadcast";
  }
  return "?";
}

}  // namespace sccl
