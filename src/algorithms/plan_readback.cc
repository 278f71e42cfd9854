// readPlan and applyPlanStatus: see plan_readback.h.
#include "algorithms/plan_readback.h"

#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/selection_trim.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/device_staging.h"
#include "kernels/shared/gather_plan.h"
#include "algorithms/reduction_context.h"

namespace sccl {
namespace {

scclResult_t planFailure(const ReductionContext& ctx, const uint64_t* plan) {
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  switch (plan[kPlanStatus]) {
    case kPlanMismatch:
      return fail(scclInvalidUsage,
                  "sparse all-reduce: rank %llu is at call %llu of a sparsifier with fingerprint "
                  "%016llx, rank %d at call %llu of %016llx (mismatched calls or configs)",
                  u(plan[kPlanRank]), u(plan[kPlanDetailA]), u(plan[kPlanDetailB]), ctx.comm->rank,
                  u(ctx.iteration), u(ctx.fingerprint));
    case kPlanTooMany:
      return fail(scclRemoteError, "rank %llu claims %llu selected entries; at most %llu allowed",
                  u(plan[kPlanRank]), u(plan[kPlanDetailA]), u(plan[kPlanDetailB]));
    case kPlanSoleCount:
      return fail(scclRemoteError,
                  "rank %llu, this call's leader, claims %llu selected entries; its top-k has %llu",
                  u(plan[kPlanRank]), u(plan[kPlanDetailA]), u(plan[kPlanDetailB]));
    case kPlanPeerFault:
      return fail(scclRemoteError,
                  "rank %llu sent an index outside its range or out of order at an earlier call "
                  "(that call left recvbuf untouched and kept the residual)",
                  u(plan[kPlanRank]));
    case kPlanBadBitmap:
      return fail(scclRemoteError,
                  "sketch bitmap: block %llu holds a byte other than 0 or 1 after the all-reduce "
                  "(a peer sent it); nothing was written",
                  u(plan[kPlanDetailA]));
    case kPlanBadIndex:
      return fail(scclRemoteError,
                  "rank %llu sent an index outside its range or out of order; nothing was "
                  "written",
                  u(plan[kPlanRank]));
    default:
      return fail(scclInternalError, "resident call: plan status %llu", u(plan[kPlanStatus]));
  }
}

}  // namespace

void writeCallRanges(const ReductionContext& ctx, uint64_t* words) {
  for (size_t r = 0; r < size_t(ctx.comm->nranks); ++r) {
    const IndexRange allowed = ctx.search.rangeFor(int(r), ctx.iteration);
    words[2 * r] = allowed.begin;
    words[2 * r + 1] = allowed.end;
  }
}

GatherPlanParams callPlanParams(const ReductionContext& ctx) {
  GatherPlanParams params;
  params.fingerprint = ctx.fingerprint;
  params.sequence = ctx.iteration;
  params.k_target = ctx.k_target;
  params.nranks = uint64_t(ctx.comm->nranks);
  params.self = uint64_t(ctx.comm->rank);
  params.cap =
      densitySlackCap(ctx.k_target, ctx.comm->nranks, ctx.config.max_density_slack, ctx.count);
  return params;
}

scclResult_t readPlan(SparseCall& call, const void* plan, size_t nranks,
                      const uint64_t** host_plan) {
  DeviceStaging& device = *call.device;
  void* host = nullptr;
  const size_t bytes = gatherPlanWords(nranks) * sizeof(uint64_t);
  SCCL_CHECK(device.hostBuffer(DeviceStaging::kPlanHost, bytes, &host));
  SCCL_CHECK(device.readBack(host, plan, bytes));
  SCCL_CHECK(device.synchronize());
  *host_plan = static_cast<const uint64_t*>(host);
  return scclSuccess;
}

void adoptPlanCounts(SparseCall& call, const uint64_t* plan) {
  const ReductionContext& ctx = *call.ctx;
  for (size_t r = 0; r < ctx.rank_counts.size(); ++r)
    ctx.rank_counts[r] = plan[kGatherPlanHeaderWords + 2 * r];
  call.k_local = ctx.rank_counts[size_t(ctx.comm->rank)];
  call.k_max = plan[kPlanMaxK];
  call.k_global = plan[kPlanKGlobal];
}

scclResult_t applyPlanStatus(SparseCall& call, const uint64_t* plan, bool* handled) {
  const ReductionContext& ctx = *call.ctx;
  *handled = plan[kPlanStatus] != kPlanOk;
  if (plan[kPlanStatus] == kPlanNonFinite) {
    const size_t n = size_t(ctx.comm->nranks);
    std::vector<CallHeader> headers(n, CallHeader{0, 0, ctx.fingerprint, ctx.iteration});
    headers[plan[kPlanRank]].nonfinite = plan[kPlanDetailA];
    call.nonfinite_local = plan[kPlanOwnNonFinite];
    return applyNonFinitePolicy(call, headers);
  }
  if (plan[kPlanStatus] != kPlanOk) return planFailure(ctx, plan);
  return scclSuccess;
}

}  // namespace sccl
