#include "tuning/cost_model.h"

#include <algorithm>

namespace sccl {

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, const LocalWork& local) {
  const std::vector<PlannedCollective> plan = planCall(config, shape);
  CallPrediction p;
  for (const PlannedCollective& c : plan) p.comm_seconds += collectiveSeconds(c, shape.nranks, link);
  const double sharing = double(std::max(1, local.ranks_per_machine));
  if (local.transport_shares_cores) p.comm_seconds *= sharing;
  p.compute_seconds = local.seconds_per_element * double(shape.count) * sharing;
  p.seconds = p.comm_seconds + p.compute_seconds;
  p.bytes = planWireBytes(plan, shape.nranks, false);
  p.collectives = plan.size();
  return p;
}

}  // namespace sccl
