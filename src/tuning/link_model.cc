#include "tuning/link_model.h"

#include <algorithm>
#include <cmath>

namespace sccl {

namespace {

CollectiveCost cheaper(CollectiveCost a, CollectiveCost b) {
  return b.seconds < a.seconds ? b : a;
}

}  // namespace

CollectiveCost collectiveCost(const PlannedCollective& c, int nranks, const LinkModel& link) {
  if (nranks <= 1) return {};
  const double n = double(nranks);
  const int steps = int(std::ceil(std::log2(n)));
  const double alpha = link.latency_s;
  const double transfer = double(c.bytes) / link.bytes_per_s;  // one message of the whole size
  switch (c.kind) {
    case CollectiveKind::kAllGather:
      return cheaper({(n - 1) * (alpha + transfer), nranks - 1},
                     {steps * alpha + (n - 1) * transfer, steps});
    case CollectiveKind::kAllReduce:
      return cheaper({steps * (alpha + transfer), steps},
                     {2 * steps * alpha + 2 * (n - 1) / n * transfer, 2 * steps});
    case CollectiveKind::kBroadcast:
      return cheaper({steps * (alpha + transfer), steps},
                     {(steps + n - 1) * alpha + 2 * (n - 1) / n * transfer, steps + nranks - 1});
  }
  return {};
}

double collectiveSeconds(const PlannedCollective& c, int nranks, const LinkModel& link) {
  return collectiveCost(c, nranks, link).seconds;
}

}  // namespace sccl
