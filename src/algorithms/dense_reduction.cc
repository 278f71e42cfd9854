// dense: the baseline every benchmark compares with. The gradient is all-reduced whole through
// the transport (rank-order sum, bitwise identical on every rank), averaged if asked. No
// selection, no residual: everything is sent, so nothing is left to feed back.
//
// Steps: count this rank's NaN/Inf values, all-gather the 32-byte call header (that count, the
// config fingerprint and the call number, algorithms/call_header.h), then either apply the
// non-finite policy exactly as the other reductions do (every rank sees the same headers, so
// every rank decides the same: scclNonFiniteError refuses naming the first such rank with
// recvbuf untouched, scclNonFinitePropagate writes NaN everywhere and discards the step) or
// all-reduce.
//
// Bytes on the wire per rank: 32 (n-1) for the headers, then 2 (n-1)/n * count * sizeof(dtype)
// each way.
//
// After "auto" switched from a sparse preset to dense (tuning/auto_retune.h) the residual still
// holds values never sent: the first dense call then all-reduces residual + gradient in the
// residual's type (4 or 8 bytes per element instead of the gradient's size), converts the sum to
// the gradient's type and zeroes the residual (runDenseReductionWithResidual).
#include <cstdint>
#include <cstring>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/reductions.h"
#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "kernels/shared/half.h"
#include "algorithms/reduction_context.h"

namespace sccl {
namespace {

// Values whose exponent bits are all ones (NaN or +-inf), read as bit patterns so that every
// floating type, float16 and bfloat16 included, takes one loop.
template <typename Bits>
uint64_t countExponentAllOnes(const void* data, size_t count, Bits exponent_mask) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t n = 0;
  for (size_t i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, bytes + i * sizeof(Bits), sizeof(Bits));
    n += (bits & exponent_mask) == exponent_mask ? 1 : 0;
  }
  return n;
}

uint64_t countNonFinite(const void* data, size_t count, scclDataType_t dtype) {
  switch (dtype) {
    case scclFloat64: return countExponentAllOnes<uint64_t>(data, count, 0x7ff0000000000000ull);
    case scclFloat16: return countExponentAllOnes<uint16_t>(data, count, 0x7c00);
    case scclBfloat16: return countExponentAllOnes<uint16_t>(data, count, 0x7f80);
    default: return countExponentAllOnes<uint32_t>(data, count, 0x7f800000u);
  }
}

// The dense all-reduce of `count` values of `dtype` at `data` into `out` (may be `data`).
scclResult_t allReduceWhole(SparseCall& call, const void* data, scclDataType_t dtype, void* out) {
  const ReductionContext& ctx = *call.ctx;
  call.k_local = ctx.count;
  call.nonfinite_local = countNonFinite(data, ctx.count, dtype);
  std::vector<CallHeader> headers;
  SCCL_CHECK(exchangeCallHeaders(
      call, [&](size_t) { return uint64_t(ctx.count); }, &headers));
  if (anyNonFinite(headers)) return applyNonFinitePolicy(call, headers);
  SCCL_CHECK(timedCollective(call, [&](Transport& transport) {
    return transport.allReduce(data, out, ctx.count, dtype, ReduceOp::Sum);
  }));
  countAllReduce(call, ctx.count * dataTypeSize(dtype));
  if (call.op == scclAvg) SCCL_CHECK(divideByRanks(out, ctx.count, dtype, ctx.comm->nranks));
  call.k_global = ctx.count;
  call.k_max = ctx.count;
  ctx.rank_counts.assign(static_cast<size_t>(ctx.comm->nranks), ctx.count);
  call.residual_updated = false;
  return scclSuccess;
}

// The residual's type (float32 or float64) to the gradient's, rounding to nearest even.
void convertFromResidualType(const void* src, scclDataType_t src_dtype, void* dst,
                             scclDataType_t dst_dtype, size_t count) {
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, count * dataTypeSize(dst_dtype));
    return;
  }
  const auto* in = static_cast<const float*>(src);  // float32: the only other residual type
  auto* out = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < count; ++i)
    out[i] = dst_dtype == scclFloat16 ? floatToFp16(in[i]) : floatToBf16(in[i]);
}

}  // namespace

scclResult_t runDenseReduction(SparseCall& call) {
  return allReduceWhole(call, call.sendbuf, call.ctx->dtype, call.recvbuf);
}

scclResult_t runDenseReductionWithResidual(SparseCall& call, void* residual) {
  const ReductionContext& ctx = *call.ctx;
  SCCL_CHECK(cpuKernels().accumulate(call.acc, residual, ctx.acc_dtype, call.sendbuf, ctx.dtype,
                                     ctx.count, &call.nonfinite_local, nullptr));
  SCCL_CHECK(allReduceWhole(call, call.acc, ctx.acc_dtype, call.acc));
  if (call.step_discarded) return scclSuccess;  // recvbuf holds NaN, the residual is kept
  convertFromResidualType(call.acc, ctx.acc_dtype, call.recvbuf, ctx.dtype, ctx.count);
  // Everything was sent: nothing is left to feed back.
  return cpuKernels().fillZero(residual, ctx.count * accElementSize(ctx), nullptr);
}

}  // namespace sccl
