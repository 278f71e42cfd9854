// The fixed per-rank capacity of the sync_free reduction (sync_free_reduction.cc): every message
// size of a call follows from it, so it is computed once, identically on every rank.
#pragma once

#include <cstdint>

namespace sccl {

// The slack used when maxDensitySlack is < 0 (off): a rank may send 25% more than its share k/n.
constexpr double kSyncFreeDefaultSlack = 0.25;

// max(1, min(count, ceil(k/n * (1 + slack)))), slack = max_density_slack, or the default when it
// is < 0. No rank selects more than count, so a larger slack (up to +inf) changes nothing but
// would size every buffer and message beyond the vector.
uint64_t syncFreeCapacity(uint64_t k_target, int nranks, double max_density_slack, uint64_t count);

}  // namespace sccl
