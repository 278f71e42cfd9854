#include "tuning/hierarchy_cost.h"

#include <algorithm>

#include "core/dtype.h"
#include "tuning/call_shape.h"
#include "tuning/wire_plan.h"

namespace sccl {
namespace {

// One collective's seconds among `ranks` on `link`, and its bytes added to *p.
void addCollective(const PlannedCollective& c, int ranks, const LinkModel& link,
                   CallPrediction* p) {
  if (ranks < 2) return;
  const CollectiveCost cost = collectiveCost(c, ranks, link);
  p->comm_seconds += cost.seconds;
  p->seconds += cost.seconds;
  p->messages += uint64_t(cost.messages);
  p->collectives += 1;
}

}  // namespace

CallPrediction predictHierarchicalCall(const ResolvedSparseConfig& flat_config, size_t count,
                                       scclDataType_t dtype, const NodeLayout& layout,
                                       const HierarchyLinks& links, const LocalWork& local) {
  const int L = std::max(1, layout.local_ranks), N = std::max(1, layout.nodes);
  const size_t chunk = (count + size_t(L) - 1) / size_t(L);
  const CallShape shape = predictCallShape(flat_config, chunk, dtype, N, ShapeAssumptions{});
  CallPrediction p = predictCall(flat_config, shape, links.across, local);
  const uint64_t vector_bytes = uint64_t(chunk) * uint64_t(L) * dataTypeSize(dtype);
  addCollective({CollectiveKind::kAllReduce, vector_bytes, "node reduce-scatter + all-gather"}, L,
                links.inside, &p);
  addCollective({CollectiveKind::kAllReduce, sizeof(uint64_t), "node verdict"}, L, links.inside,
                &p);
  addCollective({CollectiveKind::kAllGather, 3 * sizeof(uint64_t), "node statistics"}, L,
                links.inside, &p);
  addCollective({CollectiveKind::kAllReduce, sizeof(uint64_t), "non-finite count"}, N * L,
                links.whole, &p);
  return p;
}

}  // namespace sccl
