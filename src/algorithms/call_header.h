// The 32-byte header every rank all-gathers at each sparse all-reduce call of the gather and
// sketch reductions, and the non-finite policy both apply from it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"

namespace sccl {

struct CallHeader {
  uint64_t k_local;      // entries (gather) or blocks (sketch) this rank selected
  uint64_t nonfinite;    // NaN/Inf values in this rank's accumulated gradient
  uint64_t fingerprint;  // sparseConfigFingerprint: the same sparsifier config on every rank
  uint64_t sequence;     // the sparsifier's call number: the same call on every rank
};

// All-gathers this rank's header (call.k_local, call.nonfinite_local, the sparsifier's config
// fingerprint and call number) into *headers, counted as the call's communication, and checks
// every rank's before anything is used: a different sparsifier or call is scclInvalidUsage naming
// the rank; k_local above allowed(rank) (what that peer may select) is scclRemoteError.
scclResult_t exchangeCallHeaders(SparseCall& call, const std::function<uint64_t(size_t)>& allowed,
                                 std::vector<CallHeader>* headers);

// True when some rank reported NaN/Inf.
bool anyNonFinite(const std::vector<CallHeader>& headers);

// count quiet NaNs of the gradient type dtype at `out` (host memory): what recvbuf holds after a
// step discarded under scclNonFinitePropagate.
void fillWithNaN(void* out, size_t count, scclDataType_t dtype);

// A step with NaN/Inf on some rank (every rank calls it with the same headers, so every rank
// does the same): scclNonFiniteError returns scclInvalidArgument naming the first such rank,
// with nothing changed; scclNonFinitePropagate fills recvbuf with NaN of the gradient type, marks
// the step discarded (the residual stays as it was) and returns success. The NaNs are written by
// call.device on device buffers, by fillWithNaN on host buffers.
scclResult_t applyNonFinitePolicy(SparseCall& call, const std::vector<CallHeader>& headers);

}  // namespace sccl
