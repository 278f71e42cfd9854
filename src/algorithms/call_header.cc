#include "algorithms/call_header.h"

#include <algorithm>
#include <limits>

#include "core/comm.h"
#include "core/error.h"
#include "core/half.h"
#include "core/log.h"
#include "core/sparsifier.h"

namespace sccl {
namespace {

template <typename T>
void fillWith(void* buffer, size_t count, T value) {
  T* typed = static_cast<T*>(buffer);
  std::fill(typed, typed + count, value);
}

}  // namespace

bool anyNonFinite(const std::vector<CallHeader>& headers) {
  return std::any_of(headers.begin(), headers.end(),
                     [](const CallHeader& h) { return h.nonfinite > 0; });
}

scclResult_t applyNonFinitePolicy(SparseCall& call, const std::vector<CallHeader>& headers) {
  scclSparsifier& sp = *call.sp;
  size_t first = 0;
  while (first + 1 < headers.size() && headers[first].nonfinite == 0) ++first;
  if (sp.config.non_finite == scclNonFiniteError) {
    return fail(scclInvalidArgument,
                "sparse all-reduce: the accumulated gradient of rank %zu holds %llu NaN/Inf "
                "values (policy error); nothing was changed",
                first, static_cast<unsigned long long>(headers[first].nonfinite));
  }
  SCCL_WARN(LogSubsys::Coll, "rank %d: NaN/Inf in the gradient of rank %zu; step discarded",
            sp.comm->rank, first);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  switch (sp.dtype) {
    case scclFloat64:
      fillWith(call.recvbuf, sp.count, std::numeric_limits<double>::quiet_NaN());
      break;
    case scclFloat16: fillWith(call.recvbuf, sp.count, floatToFp16(nan)); break;
    case scclBfloat16: fillWith(call.recvbuf, sp.count, floatToBf16(nan)); break;
    default: fillWith(call.recvbuf, sp.count, nan); break;
  }
  call.step_discarded = true;
  return scclSuccess;
}

}  // namespace sccl
