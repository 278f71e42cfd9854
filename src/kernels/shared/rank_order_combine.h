// The element combine of the transports' reduction (transports/reduce_ops.h), shared with the
// CUDA rank-order reduction of the NCCL transport (cuda/kernels/rank_order_reduce.cu) so that
// every transport gives bitwise the same all-reduce result.
#pragma once

#include <type_traits>

#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/host_device.h"
#include "kernels/shared/reduce_op.h"

namespace sccl {

// Sum (integers wrap: computed unsigned, no undefined behaviour), max or min (NaN propagates). A
// floating result that is NaN is the canonical NaN (kernels/shared/canonical_nan.h), whatever the
// operands' payloads: x86 would keep the first NaN operand's, the GPU gives its own, and the
// transports must agree bit for bit. (Half types are combined in float32 and narrowed, which maps
// the canonical float32 NaN to the canonical 16-bit one.)
template <typename T>
SCCL_HOST_DEVICE inline T rankOrderCombine(T a, T b, ReduceOp op) {
  if (op != ReduceOp::Sum) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return canonicalizeNaN(a != a ? a : b);
    }
    // Ties (equal values, +0 and -0) keep the earlier rank's operand: the result is one of the
    // inputs' bits, the same on every transport.
    if (op == ReduceOp::Max) return a < b ? b : a;
    return b < a ? b : a;
  }
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return canonicalizeNaN(a + b);
  }
}

}  // namespace sccl
