#include "tuning/cost_model.h"

namespace sccl {

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, double compute_s_per_element) {
  const std::vector<PlannedCollective> plan = planCall(config, shape);
  CallPrediction p;
  for (const PlannedCollective& c : plan) p.comm_seconds += collectiveSeconds(c, shape.nranks, link);
  p.compute_seconds = compute_s_per_element * double(shape.count);
  p.seconds = p.comm_seconds + p.compute_seconds;
  p.bytes = planWireBytes(plan, shape.nranks, false);
  p.collectives = plan.size();
  return p;
}

}  // namespace sccl
