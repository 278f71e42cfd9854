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
#include <cstdint>
#include <cstring>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/reductions.h"
#include "core/average.h"
#include "core/dtype.h"
#include "core/error.h"

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

}  // namespace

scclResult_t runDenseReduction(SparseCall& call) {
  scclSparsifier& sp = *call.sp;
  call.k_local = sp.count;
  call.nonfinite_local = countNonFinite(call.sendbuf, sp.count, sp.dtype);
  std::vector<CallHeader> headers;
  SCCL_CHECK(exchangeCallHeaders(
      call, [&](size_t) { return uint64_t(sp.count); }, &headers));
  if (anyNonFinite(headers)) return applyNonFinitePolicy(call, headers);
  SCCL_CHECK(timedCollective(call, [&](Transport& transport) {
    return transport.allReduce(call.sendbuf, call.recvbuf, sp.count, sp.dtype, ReduceOp::Sum);
  }));
  countAllReduce(call, sp.count * dataTypeSize(sp.dtype));
  if (call.op == scclAvg)
    SCCL_CHECK(divideByRanks(call.recvbuf, sp.count, sp.dtype, sp.comm->nranks));
  call.k_global = sp.count;
  call.k_max = sp.count;
  sp.rank_counts.assign(static_cast<size_t>(sp.comm->nranks), sp.count);
  call.residual_updated = false;
  return scclSuccess;
}

}  // namespace sccl
