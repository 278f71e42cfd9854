// The element-wise reductions the dense collectives apply (sum, max, min), shared by the
// transports (transports/transport.h), the host combine (transports/reduce_ops.h) and the CUDA
// rank-order kernel, so that one value names one reduction on every layer. scclAvg is not here:
// it is Sum followed by the API's division (core/divide_by_ranks.h).
#pragma once

namespace sccl {

enum class ReduceOp { Sum, Max, Min };

constexpr bool isValidReduceOp(ReduceOp op) {
  return op == ReduceOp::Sum || op == ReduceOp::Max || op == ReduceOp::Min;
}

constexpr const char* reduceOpName(ReduceOp op) {
  return op == ReduceOp::Sum   ? "sum"
         : op == ReduceOp::Max ? "max"
         : op == ReduceOp::Min ? "min"
                               : "unknown";
}

}  // namespace sccl
