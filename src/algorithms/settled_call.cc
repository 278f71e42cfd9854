// The calls that read nothing back: see settled_call.h.
#include "algorithms/settled_call.h"

#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/reduction_context.h"
#include "core/error.h"
#include "kernels/device_staging.h"

namespace sccl {

scclResult_t startSettledTotals(const SparseCall& call, const void* words_at, SettleWords words) {
  const ReductionContext& ctx = *call.ctx;
  if (words_at == ctx.settled_plan && ctx.iteration != 0) return scclSuccess;
  const double none = std::numeric_limits<double>::quiet_NaN();
  uint64_t none_bits = 0;
  std::memcpy(&none_bits, &none, sizeof(none_bits));
  // SyncFreeTotals: completed, discarded, the sum of |k'/k - 1|, the last threshold.
  SCCL_CHECK(call.kernels->writeWords(reinterpret_cast<uint64_t*>(words.totals), 0, 0, 0, none_bits,
                                      call.stream));
  ctx.settled_plan = words_at;
  ctx.settled_first_call = ctx.iteration;
  return scclSuccess;
}

scclResult_t settleCall(const SparseCall& call, const StagedVectors& vectors, SettleWords words,
                        PlanSettleArgs a) {
  const ReductionContext& ctx = *call.ctx;
  a.status = words.status;
  a.totals = words.totals;
  a.last_completed = words.last_completed;
  a.sequence = ctx.iteration;
  a.k_target = ctx.k_target;
  a.nonfinite_is_error = ctx.config.non_finite == scclNonFiniteError;
  a.fault = vectors.async_fault;
  a.recv = call.recvbuf;
  a.recv_dtype = ctx.dtype;
  a.count = ctx.count;
  SCCL_CHECK(call.kernels->settlePlan(a, call.stream));
  if (!ctx.config.error_feedback) return scclSuccess;
  return call.kernels->copyByStatus(vectors.acc, vectors.residual, ctx.count * accElementSize(ctx),
                                    a.status, false, call.stream);
}

scclResult_t readSettled(const ReductionContext& ctx, DeviceStaging& staging, const void* plan,
                         size_t plan_words, const void* words_at, SettledRead* out) {
  out->any = ctx.settled_plan != nullptr && ctx.settled_plan == words_at;
  if (!out->any) return scclSuccess;
  out->plan.resize(plan_words);
  std::vector<char> words(kSettleWordsBytes);
  SCCL_CHECK(staging.toHost(out->plan.data(), plan, plan_words * sizeof(uint64_t)));
  SCCL_CHECK(staging.toHost(words.data(), words_at, words.size()));
  const SettleWords w = settleWordsAt(words.data());
  std::memcpy(&out->totals, w.totals, sizeof(SyncFreeTotals));
  std::memcpy(&out->last_completed, w.last_completed, sizeof(uint64_t));
  std::memcpy(&out->status, w.status, sizeof(uint32_t));
  return scclSuccess;
}

}  // namespace sccl
