// The element combine of the transports' reduction (transports/reduce_ops.h), shared with the
// CUDA rank-order reduction of the NCCL transport (cuda/kernels/rank_order_reduce.cu) so that
// every transport gives bitwise the same all-reduce result.
#pragma once

#include <type_traits>

#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/host_device.h"

namespace sccl {

// Sum (integers wrap: computed unsigned, no undefined behaviour) or max (NaN propagates). A
// floating result that is NaN is the canonical NaN (kernels/shared/canonical_nan.h), whatever the
// operands' payloads: x86 would keep the first NaN operand's, the GPU gives its own, and the
// transports must agree bit for bit. (Half types are combined in float32 and narrowed, which maps
// the canonical float32 NaN to the canonical 16-bit one.)
template <typename T>
SCCL_HOST_DEVICE inline T rankOrderCombine(T a, T b, bool max) {
  if (max) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return canonicalizeNaN(a != a ? a : b);
    }
    return a < b ? b : a;
  }
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return canonicalizeNaN(a + b);
  }
}

}  // namespace sccl
