// dense: the baseline every benchmark compares with. The gradient is all-reduced whole through
// the transport (rank-order sum, bitwise identical on every rank), averaged if asked. No
// selection, no residual: everything is sent, so nothing is left to feed back.
//
// Bytes on the wire per rank: 2 (n-1)/n * count * sizeof(dtype) each way.
#include "algorithms/exchange_accounting.h"
#include "algorithms/reductions.h"
#include "core/average.h"
#include "core/dtype.h"
#include "core/error.h"

namespace sccl {

scclResult_t runDenseReduction(SparseCall& call) {
  scclSparsifier& sp = *call.sp;
  SCCL_CHECK(timedCollective(call, [&](Transport& transport) {
    return transport.allReduce(call.sendbuf, call.recvbuf, sp.count, sp.dtype, ReduceOp::Sum);
  }));
  countAllReduce(call, sp.count * dataTypeSize(sp.dtype));
  if (call.op == scclAvg)
    SCCL_CHECK(divideByRanks(call.recvbuf, sp.count, sp.dtype, sp.comm->nranks));
  call.k_local = sp.count;
  call.k_global = sp.count;
  call.k_max = sp.count;
  sp.rank_counts.assign(static_cast<size_t>(sp.comm->nranks), sp.count);
  call.residual_updated = false;
  return scclSuccess;
}

}  // namespace sccl
