// reduceGlobalValues: see global_values.h.
#include "algorithms/global_values.h"

#include <algorithm>

#include "algorithms/reduction_context.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/device_staging.h"

namespace sccl {

scclResult_t reduceGlobalValues(SparseCall& call, StreamExchange& exchange,
                                const StagedVectors& vectors, const int64_t* global, uint64_t k,
                                const uint32_t* fault) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* values = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kValues, std::max<uint64_t>(1, k) * accElementSize(ctx),
                           &values));
  SCCL_CHECK(kernels.gatherAndZero(vectors.acc, ctx.acc_dtype, global, k, values, call.stream));
  SCCL_CHECK(exchange.allReduceSum(call, values, values, k, ctx.acc_dtype));
  if (call.op == scclAvg) {
    SCCL_CHECK(device.divideByRanks(values, k, ctx.acc_dtype, ctx.comm->nranks));
  }
  if (fault == nullptr) {
    return kernels.writeDense(call.recvbuf, ctx.dtype, ctx.count, global, values, ctx.acc_dtype, k,
                              1.0, call.stream);
  }
  return kernels.writeDenseUnlessFault(call.recvbuf, ctx.dtype, ctx.count, global, values,
                                       ctx.acc_dtype, k, 1.0, fault, call.stream);
}

}  // namespace sccl
