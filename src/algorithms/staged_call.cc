// runStagedCall: see staged_call.h.
#include "algorithms/staged_call.h"

#include <utility>

#include "algorithms/resident_gather.h"
#include "algorithms/sketch_call.h"
#include "algorithms/resident_union.h"
#include "core/error.h"
#include "algorithms/reduction_context.h"

namespace sccl {

AccumulateSelectArgs accumulatePass(const SparseCall& call, const StagedVectors& vectors,
                                    uint64_t* nonfinite) {
  const ReductionContext& ctx = *call.ctx;
  AccumulateSelectArgs a;
  a.acc = vectors.acc;
  a.residual = ctx.config.error_feedback ? vectors.residual : nullptr;
  a.acc_dtype = ctx.acc_dtype;
  a.grad = call.sendbuf;
  a.grad_dtype = ctx.dtype;
  a.count = ctx.count;
  a.nonfinite = nonfinite;
  return a;
}

bool callReadsNothingBack(const ReductionContext& ctx) {
  return sketchReadsNoPlan(ctx) ||
         (residentGatherApplies(ctx) && ctx.search.soleSelector(ctx.iteration) >= 0);
}

scclResult_t settledCallStats(const ReductionContext& ctx, DeviceStaging& staging,
                              scclSparseStats_t* stats) {
  if (!callReadsNothingBack(ctx)) return scclSuccess;
  return isSketchCall(ctx) ? sketchDeviceStats(ctx, staging, stats)
                           : residentLeaderStats(ctx, staging, stats);
}

scclResult_t runStagedCall(SparseCall& call, const KernelBackend& kernels, DeviceStaging& staging,
                           StagedVectors& vectors, void* stream, StreamExchange* exchange) {
  const ReductionContext& ctx = *call.ctx;
  const bool gather = exchange != nullptr && vectors.fault != nullptr && residentGatherApplies(ctx);
  const bool sketch = exchange != nullptr && isSketchCall(ctx);
  if (gather || sketch || (exchange != nullptr && residentUnionApplies(ctx))) {
    call.kernels = &kernels;
    call.device = &staging;
    call.stream = stream;
    SCCL_CHECK(gather   ? runResidentGather(call, *exchange, vectors)
               : sketch ? runSketchCall(call, *exchange, vectors)
                        : runResidentUnion(call, *exchange, vectors));
    if (call.step_discarded) return scclSuccess;
    if (ctx.config.error_feedback) std::swap(vectors.residual, vectors.acc);
    // The union call's checks and a sketch call's read plan ran before anything was written (a
    // sketch call that reads nothing back put its residual back itself); the gather's slice
    // check runs after its read-back and may have to put the residual back.
    return gather ? restoreAfterFault(call, vectors) : scclSuccess;
  }
  const void* residual = ctx.config.error_feedback ? vectors.residual : nullptr;
  if (ctx.reduction.fused_accumulate) {
    call.residual = residual;  // the reduction accumulates in its own pass
    call.nonfinite_word = vectors.nonfinite;
  } else {
    SCCL_CHECK(kernels.fillZero(vectors.nonfinite, sizeof(uint64_t), stream));
    SCCL_CHECK(kernels.accumulate(vectors.acc, residual, ctx.acc_dtype, call.sendbuf, ctx.dtype,
                                  ctx.count, vectors.nonfinite, stream));
    SCCL_CHECK(staging.toHost(&call.nonfinite_local, vectors.nonfinite, sizeof(uint64_t)));
  }
  call.acc = vectors.acc;
  call.kernels = &kernels;
  call.device = &staging;
  call.stream = stream;
  SCCL_CHECK(ctx.reduction.run(call));
  if (call.step_discarded) return scclSuccess;  // the residual stays as it was
  if (call.residual_updated && ctx.config.error_feedback) std::swap(vectors.residual, vectors.acc);
  return scclSuccess;
}

}  // namespace sccl
