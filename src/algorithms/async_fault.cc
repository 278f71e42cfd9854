// asyncFaultError: see async_fault.h.
#include "algorithms/async_fault.h"

#include <cstdio>

#include "core/error.h"
#include "kernels/shared/sync_free_async_fault.h"

namespace sccl {
namespace {

const char* faultText(AsyncFault fault) {
  switch (fault) {
    case AsyncFault::OtherCall: return "was at another call or config (mismatched calls)";
    case AsyncFault::CountAboveCapacity:
      return "claimed a count it may not send (past its capacity or range, or not its top-k as "
             "the leader)";
    case AsyncFault::IndexOutOfRange:
      return "sent an index outside its range or out of order (a peer's slot)";
    case AsyncFault::NonFinite: return "had NaN/Inf in its accumulated gradient (policy error)";
    case AsyncFault::BadBitmap:
      return "sent a block bitmap byte other than 0 or 1 (the union of S2's bitmaps)";
    default: return "reported an unknown fault";
  }
}

scclResult_t faultResult(AsyncFault fault) {
  switch (fault) {
    case AsyncFault::OtherCall: return scclInvalidUsage;
    case AsyncFault::NonFinite: return scclInvalidArgument;
    default: return scclRemoteError;
  }
}

}  // namespace

scclResult_t asyncFaultError(uint64_t word, const char* call) {
  const AsyncFault fault = asyncFaultKind(word);
  const int rank = asyncFaultRank(word);
  char who[32] = "a peer";
  if (rank >= 0) std::snprintf(who, sizeof(who), "rank %d", rank);
  return fail(faultResult(fault),
              "sparse all-reduce (%s, device): at call %u %s %s; every later call fills recvbuf "
              "with NaN and changes nothing until scclSparsifierReset",
              call, asyncFaultCall(word), who, faultText(fault));
}

}  // namespace sccl
