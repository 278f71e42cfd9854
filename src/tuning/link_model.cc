#include "tuning/link_model.h"

#include <algorithm>
#include <cmath>

namespace sccl {

double collectiveSeconds(const PlannedCollective& c, int nranks, const LinkModel& link) {
  if (nranks <= 1) return 0;
  const double n = double(nranks);
  const double steps = std::ceil(std::log2(n));
  const double alpha = link.latency_s;
  const double transfer = double(c.bytes) / link.bytes_per_s;  // one message of the whole size
  switch (c.kind) {
    case CollectiveKind::kAllGather:
      return std::min((n - 1) * (alpha + transfer), steps * alpha + (n - 1) * transfer);
    case CollectiveKind::kAllReduce:
      return std::min(steps * (alpha + transfer),
                      2 * steps * alpha + 2 * (n - 1) / n * transfer);
    case CollectiveKind::kBroadcast:
      return std::min(steps * (alpha + transfer),
                      (steps + n - 1) * alpha + 2 * (n - 1) / n * transfer);
  }
  return 0;
}

}  // namespace sccl
