// runStagedCall: see staged_call.h.
#include "algorithms/staged_call.h"

#include <utility>

#include "algorithms/resident_gather.h"
#include "algorithms/sketch_call.h"
#include "algorithms/resident_union.h"
#include "core/error.h"
#include "sparsifier/sparsifier.h"

namespace sccl {

scclResult_t runStagedCall(SparseCall& call, const KernelBackend& kernels, DeviceStaging& staging,
                           StagedVectors& vectors, void* stream, StreamExchange* exchange) {
  scclSparsifier& sp = *call.sp;
  const bool gather = exchange != nullptr && vectors.fault != nullptr && residentGatherApplies(sp);
  const bool sketch = exchange != nullptr && isSketchCall(sp);
  if (gather || sketch || (exchange != nullptr && residentUnionApplies(sp))) {
    call.kernels = &kernels;
    call.device = &staging;
    call.stream = stream;
    SCCL_CHECK(gather   ? runResidentGather(call, *exchange, vectors)
               : sketch ? runSketchCall(call, *exchange, vectors)
                        : runResidentUnion(call, *exchange, vectors));
    if (call.step_discarded) return scclSuccess;
    if (sp.config.error_feedback) std::swap(vectors.residual, vectors.acc);
    // The union and sketch calls' checks all ran before anything was written; the gather's
    // slice check runs after its read-back and may have to put the residual back.
    return gather ? restoreAfterFault(call, vectors) : scclSuccess;
  }
  const void* residual = sp.config.error_feedback ? vectors.residual : nullptr;
  if (sp.reduction->fused_accumulate) {
    call.residual = residual;  // the reduction accumulates in its own pass
    call.nonfinite_word = vectors.nonfinite;
  } else {
    SCCL_CHECK(kernels.fillZero(vectors.nonfinite, sizeof(uint64_t), stream));
    SCCL_CHECK(kernels.accumulate(vectors.acc, residual, sp.acc_dtype, call.sendbuf, sp.dtype,
                                  sp.count, vectors.nonfinite, stream));
    SCCL_CHECK(staging.toHost(&call.nonfinite_local, vectors.nonfinite, sizeof(uint64_t)));
  }
  call.acc = vectors.acc;
  call.kernels = &kernels;
  call.device = &staging;
  call.stream = stream;
  SCCL_CHECK(sp.reduction->run(call));
  if (call.step_discarded) return scclSuccess;  // the residual stays as it was
  if (call.residual_updated && sp.config.error_feedback) std::swap(vectors.residual, vectors.acc);
  return scclSuccess;
}

}  // namespace sccl
