#include "algorithms/call_header.h"

#include <algorithm>
#include <limits>

#include "kernels/device_staging.h"
#include "algorithms/exchange_accounting.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "core/log.h"
#include "algorithms/reduction_context.h"

namespace sccl {
namespace {

template <typename T>
void fillWith(void* buffer, size_t count, T value) {
  T* typed = static_cast<T*>(buffer);
  std::fill(typed, typed + count, value);
}

}  // namespace

scclResult_t exchangeCallHeaders(SparseCall& call, const std::function<uint64_t(size_t)>& allowed,
                                 std::vector<CallHeader>* headers) {
  const ReductionContext& ctx = *call.ctx;
  const CallHeader mine{call.k_local, call.nonfinite_local, ctx.fingerprint, ctx.iteration};
  headers->assign(static_cast<size_t>(ctx.comm->nranks), CallHeader{});
  SCCL_CHECK(timedCollective(
      call, [&](Transport& t) { return t.allGather(&mine, headers->data(), sizeof(CallHeader)); }));
  countAllGather(call, sizeof(CallHeader));
  for (size_t r = 0; r < headers->size(); ++r) {
    const CallHeader& h = (*headers)[r];
    if (h.fingerprint != mine.fingerprint || h.sequence != mine.sequence) {
      return fail(scclInvalidUsage,
                  "sparse all-reduce: rank %zu is at call %llu of a sparsifier with fingerprint "
                  "%016llx, rank %d at call %llu of %016llx (mismatched calls or configs)",
                  r, static_cast<unsigned long long>(h.sequence),
                  static_cast<unsigned long long>(h.fingerprint), ctx.comm->rank,
                  static_cast<unsigned long long>(mine.sequence),
                  static_cast<unsigned long long>(mine.fingerprint));
    }
    const uint64_t limit = allowed(r);
    if (h.k_local > limit) {
      return fail(scclRemoteError, "rank %zu claims %llu selected entries; at most %llu allowed", r,
                  static_cast<unsigned long long>(h.k_local),
                  static_cast<unsigned long long>(limit));
    }
  }
  return scclSuccess;
}

bool anyNonFinite(const std::vector<CallHeader>& headers) {
  return std::any_of(headers.begin(), headers.end(),
                     [](const CallHeader& h) { return h.nonfinite > 0; });
}

void fillWithNaN(void* out, size_t count, scclDataType_t dtype) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  switch (dtype) {
    case scclFloat64: fillWith(out, count, std::numeric_limits<double>::quiet_NaN()); break;
    case scclFloat16: fillWith(out, count, floatToFp16(nan)); break;
    case scclBfloat16: fillWith(out, count, floatToBf16(nan)); break;
    default: fillWith(out, count, nan); break;
  }
}

scclResult_t applyNonFinitePolicy(SparseCall& call, const std::vector<CallHeader>& headers) {
  const ReductionContext& ctx = *call.ctx;
  size_t first = 0;
  while (first + 1 < headers.size() && headers[first].nonfinite == 0) ++first;
  if (ctx.config.non_finite == scclNonFiniteError) {
    return fail(scclInvalidArgument,
                "sparse all-reduce: the accumulated gradient of rank %zu holds %llu NaN/Inf "
                "values (policy error); nothing was changed",
                first, static_cast<unsigned long long>(headers[first].nonfinite));
  }
  SCCL_WARN(LogSubsys::Coll, "rank %d: NaN/Inf in the gradient of rank %zu; step discarded",
            ctx.comm->rank, first);
  if (call.device != nullptr) {
    SCCL_CHECK(call.device->fillNaN(call.recvbuf, ctx.count, ctx.dtype));
  } else {
    fillWithNaN(call.recvbuf, ctx.count, ctx.dtype);
  }
  call.step_discarded = true;
  return scclSuccess;
}

}  // namespace sccl
