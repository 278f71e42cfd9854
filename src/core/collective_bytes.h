// The bytes one collective moves in and out of a rank: the one definition that the reductions'
// statistics (algorithms/exchange_accounting.h) and the cost model (tuning/wire_plan.h) share.
//
// Bandwidth-optimal per-rank volumes, as nccl-tests' bus bandwidth assumes: an all-gather of B
// bytes per rank sends B and receives (n-1) B; an all-reduce of S bytes sends and receives
// 2 (n-1)/n S (reduce-scatter + all-gather; our transports move exactly that); a broadcast of B:
// the root sends B, every other rank receives B. With one rank nothing moves.
#pragma once

#include <cstdint>

namespace sccl {

struct WireBytes {
  uint64_t sent = 0;
  uint64_t received = 0;
};

inline WireBytes allGatherWireBytes(uint64_t bytes_per_rank, int nranks) {
  if (nranks <= 1) return {};
  return {bytes_per_rank, bytes_per_rank * uint64_t(nranks - 1)};
}

inline WireBytes allReduceWireBytes(uint64_t bytes, int nranks) {
  if (nranks <= 1) return {};
  const uint64_t moved = bytes * 2 * uint64_t(nranks - 1) / uint64_t(nranks);
  return {moved, moved};
}

inline WireBytes broadcastWireBytes(uint64_t bytes, int nranks, bool is_root) {
  if (nranks <= 1) return {};
  return is_root ? WireBytes{bytes, 0} : WireBytes{0, bytes};
}

}  // namespace sccl
