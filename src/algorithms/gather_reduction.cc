// gather: the data path of MiCRO, ExDyna, Top-k, CLT-k and the hard threshold.
// Host buffers run the resident calls as device buffers do (runResidentOnHost below): MiCRO,
// ExDyna and CLT-k (every config residentGatherApplies accepts) the resident gather call
// (resident_gather.cc); Top-k, the hard threshold, SIDCo, DGC and every other estimator, over the
// whole vector or exclusive ranges, the union call (resident_union.cc). This file's steps are the
// call of the configs neither covers (max_density_slack outside the resident gather; a leader
// with an estimator other than top-k), on host buffers and, through the device staging, on device
// buffers.
//
// Papers: MiCRO and ExDyna (Yoon & Oh), whose reference code runs exactly these collectives.
// Steps of one call on rank r at iteration t (gather_selection.cc has steps 0 and 1):
//  0. acc = residual + gradient, in one pass that also selects what the threshold allows before
//     the data is known; with the density correction (density_correction.cc) that pass counts
//     the bins around the threshold and keeps the candidates, and an all-reduce of the bin
//     counts gives the threshold that selects about k entries of this call's data.
//  1. range = search space's range for (r, t); threshold from the estimator (or the
//     correction); select |acc| >= threshold in the range (exact top-k: ties at the k-th value
//     trimmed by highest index; max_density_slack: at most ceil(k/n (1 + slack)) entries, the
//     largest).
//  2. all-gather a 32-byte header per rank: k_i, non-finite count, config fingerprint, sequence.
//     Mismatched fingerprints or sequences are scclInvalidUsage naming the rank; any non-finite
//     value triggers the scclNonFinitePolicy_t on every rank.
//  3. indices: a sole selector (CLT-k's leader) broadcasts its k indices; otherwise all-gather
//     the index lists padded to max k_i. Peer indices are range-checked before use.
//  4. gather acc at the k' global indices, all-reduce those float32 (float64) values.
//  5. recvbuf = zeros + scatter (divided by n for scclAvg), written once (writeDense) and only
//     now, after every peer's data passed its checks; residual =
//     acc zeroed at all k' indices as step 4 reads them, including those other ranks chose,
//     since this rank's values there were sent too.
//  6. estimator and search space observe (k', k_i): identical on every rank.
// Bytes per rank (int64 indices, float32 values): header 32 (n-1) in; indices: max_k*8 out,
// (n-1)*max_k*8 in (padded), or k*8 broadcast; values 2 (n-1)/n k' 4 each way.
// On device buffers (cuda/device_staged_call.cc) the same code runs with the CUDA kernels: the
// selection's indices come to the host for the exchange and the checks, the global indices go
// back, values stay on the device (kernels/device_staging.h).
// Differences from the reference code: n = 1 works; padding is -1 and never read; a rank that
// selects nothing sends nothing (the reference forces one index); the in-band threshold rule
// (see estimators/scaling_estimator.cc); NaN/Inf never stay in a residual.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "algorithms/call_header.h"
#include "algorithms/gather_selection.h"
#include "kernels/device_staging.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/index_exchange.h"
#include "algorithms/resident_gather.h"
#include "algorithms/resident_union.h"
#include "algorithms/stream_exchange.h"
#include "kernels/shared/gather_plan.h"
#include "algorithms/reductions.h"
#include "algorithms/threshold_query.h"
#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

// Step 3: the global index list in ctx.global_indices.
scclResult_t exchangeIndices(SparseCall& call, int sole, size_t selected) {
  const ReductionContext& ctx = *call.ctx;
  const int n = ctx.comm->nranks;
  if (sole >= 0) {
    uint64_t k = ctx.rank_counts[static_cast<size_t>(sole)];
    if (ctx.gathered_indices.size() < k) ctx.gathered_indices.resize(k);
    if (ctx.comm->rank == sole)
      std::copy_n(ctx.local_indices.data(), k, ctx.gathered_indices.data());
    SCCL_CHECK(timedCollective(call, [&](Transport& t) {
      return t.broadcast(ctx.gathered_indices.data(), k * sizeof(int64_t), sole);
    }));
    countBroadcast(call, k * sizeof(int64_t), sole);
    std::vector<const int64_t*> slices(static_cast<size_t>(n), nullptr);
    slices[static_cast<size_t>(sole)] = ctx.gathered_indices.data();
    return assembleGlobalIndices(slices, ctx.rank_counts, ctx.search, ctx.iteration, ctx.count,
                                 &ctx.global_indices);
  }
  const uint64_t max_k = call.k_max;
  // Buffers only grow (no shrink-and-refill each call); the padding past k_i is -1.
  if (ctx.local_indices.size() < max_k) ctx.local_indices.resize(max_k);
  std::fill(ctx.local_indices.begin() + long(selected), ctx.local_indices.begin() + long(max_k),
            int64_t{-1});
  if (ctx.gathered_indices.size() < max_k * uint64_t(n))
    ctx.gathered_indices.resize(max_k * uint64_t(n));
  if (max_k > 0) {
    SCCL_CHECK(timedCollective(call, [&](Transport& t) {
      return t.allGather(ctx.local_indices.data(), ctx.gathered_indices.data(),
                         max_k * sizeof(int64_t));
    }));
    countAllGather(call, max_k * sizeof(int64_t));
  }
  std::vector<const int64_t*> slices(static_cast<size_t>(n));
  for (size_t r = 0; r < slices.size(); ++r) slices[r] = ctx.gathered_indices.data() + r * max_k;
  return assembleGlobalIndices(slices, ctx.rank_counts, ctx.search, ctx.iteration, ctx.count,
                               &ctx.global_indices);
}

// Steps 4 and 5. On device buffers the global indices go to the device (8 bytes each) and the
// values stay there.
scclResult_t reduceValuesAndWrite(SparseCall& call) {
  const ReductionContext& ctx = *call.ctx;
  const KernelBackend& kernels = callKernels(call);
  const size_t k = ctx.global_indices.size();
  const size_t element = accElementSize(ctx);
  ctx.values.resize(std::max<size_t>(1, k) * element);
  void* indices = nullptr;
  void* values = nullptr;
  SCCL_CHECK(stagedArray(call.device, DeviceStaging::kGlobalIndices, ctx.global_indices.data(),
                         k * sizeof(int64_t), true, &indices));
  SCCL_CHECK(stagedArray(call.device, DeviceStaging::kValues, ctx.values.data(), k * element, false,
                         &values));
  const int64_t* idx = static_cast<const int64_t*>(indices);
  // acc (the new residual) is zeroed where sent as its values are read: one visit per entry.
  SCCL_CHECK(kernels.gatherAndZero(call.acc, ctx.acc_dtype, idx, k, values, call.stream));
  if (k > 0) {
    if (call.device != nullptr) SCCL_CHECK(call.device->synchronize());
    SCCL_CHECK(timedCollective(call, [&](Transport& t) {
      return t.allReduce(values, values, k, ctx.acc_dtype, ReduceOp::Sum);
    }));
    countAllReduce(call, k * element);
  }
  if (call.op == scclAvg) {
    SCCL_CHECK(call.device != nullptr
                   ? call.device->divideByRanks(values, k, ctx.acc_dtype, ctx.comm->nranks)
                   : divideByRanks(values, k, ctx.acc_dtype, ctx.comm->nranks));
  }
  SCCL_CHECK(kernels.writeDense(call.recvbuf, ctx.dtype, ctx.count, idx, values, ctx.acc_dtype, k,
                                1.0, call.stream));
  call.residual_updated = true;
  return scclSuccess;
}

// A resident call (resident_gather.cc, resident_union.cc) on host buffers: the CPU kernels on
// host memory (ctx.host_staging as the kernels' memory, its copies memcpy and its waits nothing),
// the communicator's transport in place, and the pass's candidates. The plan is in host memory,
// so a peer's bad index is an error of this call, as the checks before it are.
enum class ResidentCall { kGather, kUnion };

scclResult_t runResidentOnHost(SparseCall& call, ResidentCall which) {
  const ReductionContext& ctx = *call.ctx;
  HostStaging& staging = ctx.host_staging;
  void* fault = nullptr;
  SCCL_CHECK(staging.buffer(DeviceStaging::kIndexFault, sizeof(uint32_t), &fault));
  *static_cast<uint32_t*>(fault) = kNoIndexFault;
  StagedVectors vectors{const_cast<void*>(call.residual), call.acc, nullptr,
                        static_cast<uint32_t*>(fault), nullptr};
  call.kernels = &cpuKernels();
  call.device = &staging;
  call.stream = nullptr;
  HostExchange exchange;
  const scclResult_t result = which == ResidentCall::kGather
                                  ? runResidentGather(call, exchange, vectors, true)
                                  : runResidentUnion(call, exchange, vectors, true);
  call.kernels = nullptr;
  call.device = nullptr;
  if (result != scclSuccess || call.step_discarded) return result;
  // The union checks every slice before its plan is read back (an error of the call above); the
  // gather's slice check runs after, into the fault word.
  const uint32_t faulty = *static_cast<const uint32_t*>(fault);
  if (faulty != kNoIndexFault) {
    call.residual_updated = false;  // recvbuf untouched (writeDenseUnlessFault), residual kept
    return fail(scclRemoteError,
                "rank %u sent an index outside the range it selects in, or out of order; nothing "
                "was written",
                faulty);
  }
  // What scclSparsifierMaskSent zeroes: this call's global list.
  void* global = nullptr;
  SCCL_CHECK(staging.buffer(DeviceStaging::kGlobalIndices,
                            std::max<uint64_t>(1, call.k_global) * sizeof(int64_t), &global));
  const auto* indices = static_cast<const int64_t*>(global);
  ctx.global_indices.assign(indices, indices + call.k_global);
  return scclSuccess;
}

}  // namespace

scclResult_t runGatherReduction(SparseCall& call) {
  const ReductionContext& ctx = *call.ctx;
  if (call.device == nullptr && residentGatherApplies(ctx))
    return runResidentOnHost(call, ResidentCall::kGather);
  if (call.device == nullptr && residentUnionApplies(ctx))
    return runResidentOnHost(call, ResidentCall::kUnion);
  const int rank = ctx.comm->rank;
  const int sole = ctx.search.soleSelector(ctx.iteration);
  IndexRange range = ctx.search.rangeFor(rank, ctx.iteration);
  call.threshold = ctx.estimator.currentThreshold();
  size_t selected = 0;
  const bool selects = (sole < 0 || sole == rank) && range.size() > 0;
  SCCL_CHECK(accumulateAndSelect(call, range, selects, &selected));
  call.k_local = selected;

  // Step 2. A peer may claim at most the size of its range (a sole selector: the others none).
  std::vector<CallHeader> headers;
  SCCL_CHECK(exchangeCallHeaders(
      call,
      [&](size_t r) -> uint64_t {
        if (sole >= 0 && static_cast<int>(r) != sole) return 0;
        return ctx.search.exclusive()
                   ? ctx.search.rangeFor(static_cast<int>(r), ctx.iteration).size()
                   : ctx.count;
      },
      &headers));
  if (anyNonFinite(headers)) return applyNonFinitePolicy(call, headers);
  call.k_max = 0;
  for (size_t r = 0; r < headers.size(); ++r) {
    ctx.rank_counts[r] = headers[r].k_local;
    call.k_max = std::max(call.k_max, headers[r].k_local);
  }
  SCCL_CHECK(exchangeIndices(call, sole, selected));
  SCCL_CHECK(reduceValuesAndWrite(call));
  call.k_global = ctx.global_indices.size();
  ctx.estimator.observe(call.k_global, ctx.k_target);
  ctx.search.observeCounts(ctx.rank_counts.data(), ctx.iteration);
  return scclSuccess;
}

}  // namespace sccl
