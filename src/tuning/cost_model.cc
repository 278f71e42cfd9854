#include "tuning/cost_model.h"

#include <algorithm>

namespace sccl {

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, const LocalWork& local) {
  const std::vector<PlannedCollective> plan = planCall(config, shape);
  CallPrediction p;
  for (const PlannedCollective& c : plan) p.comm_seconds += collectiveSeconds(c, shape.nranks, link);
  p.compute_seconds =
      local.seconds_per_element * double(shape.count) * double(std::max(1, local.ranks_per_machine));
  p.seconds = p.comm_seconds + p.compute_seconds;
  p.bytes = planWireBytes(plan, shape.nranks, false);
  p.collectives = plan.size();
  return p;
}

}  // namespace sccl
