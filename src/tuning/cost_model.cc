#include "tuning/cost_model.h"

#include <algorithm>

namespace sccl {

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, const LocalWork& local) {
  const std::vector<PlannedCollective> plan = planCall(config, shape);
  CallPrediction p;
  double wire = 0;
  for (const PlannedCollective& c : plan) {
    const CollectiveCost cost = collectiveCost(c, shape.nranks, link);
    wire += cost.seconds;
    p.messages += uint64_t(cost.messages);
  }
  p.bytes = planWireBytes(plan, shape.nranks, false);
  p.collectives = plan.size();
  p.entries = planAggregatedEntries(config, shape);
  const double sharing = double(std::max(1, local.ranks_per_machine));
  const double transport_sharing = local.transport_shares_cores ? sharing : 1.0;
  // The wire and the transport's CPU work overlap (a transfer is paced by the slower of the two);
  // the per-message work does not (each message waits for its receiver).
  const double host = transport_sharing * local.transport_seconds_per_byte *
                      double(p.bytes.sent + p.bytes.received);
  p.comm_seconds = std::max(wire, host) +
                   transport_sharing * local.transport_seconds_per_message * double(p.messages);
  p.compute_seconds = local.seconds_per_element * double(shape.count) * sharing;
  p.aggregate_seconds = local.seconds_per_entry * double(p.entries) * sharing;
  p.seconds = p.comm_seconds + p.compute_seconds + p.aggregate_seconds;
  return p;
}

}  // namespace sccl
