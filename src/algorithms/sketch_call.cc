// The S2 call (preset s2, the sketch reduction), for host and device buffers alike: written
// against the kernel interface, it runs on a GPU with the CUDA backend and on host buffers with
// the CPU backend over host memory (host_staging.h), the same steps in the same order.
//
// Paper: K. Ge, Y. Fu, Y. Zhang, Z. Lai, X. Deng, D. Li, "S2 Reducer: High-Performance Sparse
// Communication to Accelerate Distributed Deep Learning" (ICASSP 2022), Algorithm 1. Reference
// code: GeKeShi/Sparse_Sketch_Reducer, Sketch_Embed_Reducer + CSVec (LSTM/gradient_reducers.py,
// LSTM/codings/cs_embedding/csvec.py).
//
// Steps of one call on rank r (d_ = the kernels' memory, all on the call's stream):
//  1. r's header = [0, 0, fingerprint, call number] (call_header.h's layout: count, NaN/Inf
//     count, fingerprint, call number), written by a launch that carries the four words;
//  2. d_acc = d_residual + gradient, the non-finite count into the header (accumulate);
//  3. blocks of B = sketchBlockSize elements (the last one may be shorter), one bitmap byte per
//     block: "topk" marks the K = min(blocks, ceil(k / B)) blocks of largest L2 norm among those
//     that are not all zero (blockSquaredNorms, markTopBlocks; ties to the lower block index, a
//     NaN norm counts as the largest; the K-th norm kept on the device); "nonzero" marks every
//     block holding a non-zero value (markNonzeroBlocks); markedElements writes k_r, the
//     elements in r's marked blocks, into the header;
//  4. all-gather the headers and all-reduce the bitmaps with uint8 max (the union: an exact OR
//     of 0/1 flags in any order, 1 byte per block; a uint8 sum would wrap to 0 when a multiple of
//     256 ranks mark a block, an int32 sum moves 4 bytes per block, a packed bit per block would
//     need a bitwise-OR all-reduce the transports do not offer);
//  5. planSketch (kernels/shared/sketch_plan.h): every header checked (call, config, k_r within
//     the vector; mismatched calls are scclInvalidUsage), NaN/Inf anywhere follows the
//     scclNonFinitePolicy_t on every rank, every union byte must be 0 or 1 (scclRemoteError
//     otherwise), the union's marked elements;
//  6. with the plan read (host buffers, "nonzero"): the plan read back (64 + 16 n bytes) and
//     the one wait: the host applies a failed check or the non-finite policy before anything is
//     written, observes the counts. "topk" on device buffers reads nothing back: the table was
//     sized at creation and the encode lists at most K whole blocks;
//  7. zero the r x c table (every call) and encode: table[j][h_j(i)] += s_j(i) acc[i] for every
//     non-zero acc[i] in r's marked blocks (hashes: count_sketch.h). Width, the paper's
//     lambda = c / (non-zeros): "topk" sends about k elements, so c = ceil(lambda k) at creation;
//     "nonzero" sends whatever is non-zero, so c = ceil(lambda max_r k_r) from this call's plan
//     (the same on every rank, at most 2^32 - 1);
//  8. all-reduce the table (float32, or float64 for float64 data; rank-order sum, so the result
//     is the sketch of the sum of the ranks' selections and bitwise the same everywhere);
//  9. decode: for every element of every block of the union, the median over the r rows of
//     s_j(i) table[j][h_j(i)], divided by n for scclAvg, written to recvbuf in its dtype; zeros
//     elsewhere;
// 10. residual ("unselected", default): acc with r's marked blocks zeroed: what was not
//     transmitted stays; what was encoded is gone, its decode error is not fed back, and values
//     of blocks that only other ranks marked stay too (they were not sent: unlike the gather
//     reduction, the sketch travels in one round, before the union is known). "decode_error":
//     in every block of the union, residual = acc - decoded sum / n, elsewhere acc. Summed over
//     ranks the residuals then hold sum(acc) - decoded sum, so the gradient sum is conserved:
//     sum of gradients = sum of outputs + sum of residuals, exactly in real arithmetic and up to
//     the roundings of acc - decoded / n in floating point (none when the values are dyadic and
//     fit the mantissa). The price: a rank's residual then carries its share of the other ranks'
//     values and of the collision error, not only its own unsent values. The caller swaps
//     residual and accumulator.
// 11. "topk" on device buffers: settlePlan (kernels/shared/plan_settle.h) decides the call from
//     the plan, the policy and the sticky fault word: recvbuf = NaN and the residual put back
//     unless it completes; a failed check raises the fault (settled_call.h).
// Read-backs: one, the plan (on host buffers a copy within host memory); none with "topk" on
// device buffers. Waits: one with collectives on the stream (NCCL), none with "topk"; over host
// transports from device buffers one more per collective (StagedExchange): four ("topk": three).
// The encode gets the rank's marked elements (from the plan) or K whole blocks as the bound of
// what it lists, so the CUDA encode sizes its sort without reading back.
// Bytes on the wire per rank: headers (n-1) 32 in (the host reduction's call header); bitmap 2
// (n-1)/n ceil(count / B) each way; table 2 (n-1)/n r c 4 (8 for float64) each way (NCCL: an
// all-gather and a rank-order sum, for bitwise results). Independent of the overlap between ranks,
// unlike the all-gather of (index, value) pairs whose index traffic grows with n max(k_i).
// Differences from the reference code: the decoded gradient is written to recvbuf (the
// reference assigns it to a local and drops it); the table is zeroed every call (the reference
// table is a running sum with reuse_sketch); every sparsifier owns its sketch (the reference
// shares one across tensors); r rows with a median (the reference hard-codes r = 1, and its
// GNMT copy uses bucket i mod c and a mean); seeded 64-bit mixing hashes without overflow (the
// reference's int64 polynomial hashes wrap); the bitmap is uint8/max, not float32/sum; error
// feedback is offered (the reference has none); any block size, with a partial last block.
#include "algorithms/sketch_call.h"

#include <algorithm>
#include <cstddef>
#include <chrono>
#include <cmath>
#include <cstring>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/plan_readback.h"
#include "algorithms/reductions.h"
#include "algorithms/settled_call.h"
#include "algorithms/sketch_state.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/shared/sketch_plan.h"
#include "algorithms/reduction_context.h"

namespace sccl {

// The header is the other reductions' call header, word for word.
static_assert(sizeof(CallHeader) == kSketchHeaderWords * sizeof(uint64_t) &&
                  offsetof(CallHeader, k_local) == kSketchElements * sizeof(uint64_t) &&
                  offsetof(CallHeader, nonfinite) == kSketchNonFinite * sizeof(uint64_t) &&
                  offsetof(CallHeader, fingerprint) == kSketchFingerprint * sizeof(uint64_t) &&
                  offsetof(CallHeader, sequence) == kSketchSequence * sizeof(uint64_t),
              "the S2 header is call_header.h's CallHeader");

bool isSketchCall(const ReductionContext& ctx) {
  return std::strcmp(ctx.reduction.name, "sketch") == 0;  // prepareSketchReduction made its state
}

bool sketchReadsNoPlan(const ReductionContext& ctx) {
  return isSketchCall(ctx) && !static_cast<const SketchState&>(*ctx.reduction_state).select_nonzero;
}

namespace {

// The plan buffer: the plan with its scratch, then, for a call that reads nothing back, its
// settle words.
size_t planBytes(size_t nranks) {
  return sketchPlanWords(nranks) * sizeof(uint64_t) + kSettleWordsBytes;
}
void* settleWordsOf(void* plan, size_t nranks) {
  return static_cast<char*>(plan) + sketchPlanWords(nranks) * sizeof(uint64_t);
}

}  // namespace

scclResult_t runSketchCall(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors) {
  const ReductionContext& ctx = *call.ctx;
  SketchState& st = static_cast<SketchState&>(*ctx.reduction_state);
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(ctx.comm->nranks);
  const auto start = std::chrono::steady_clock::now();
  const size_t blocks = st.shape.blocks();
  // Reads nothing back: the "topk" selection on memory with a sticky fault word (device buffers;
  // settled_call.h).
  const bool unread = vectors.async_fault != nullptr && !st.select_nonzero;

  // Step 1.
  void *header = nullptr, *headers = nullptr, *plan = nullptr, *local = nullptr,
       *union_bitmap = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kRecord, kSketchHeaderWords * sizeof(uint64_t), &header));
  SCCL_CHECK(
      device.buffer(DeviceStaging::kHeaders, n * kSketchHeaderWords * sizeof(uint64_t), &headers));
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, planBytes(n), &plan));
  SCCL_CHECK(device.buffer(DeviceStaging::kLocalBitmap, std::max<size_t>(1, blocks), &local));
  SCCL_CHECK(
      device.buffer(DeviceStaging::kGlobalBitmap, std::max<size_t>(1, blocks), &union_bitmap));
  uint64_t* own = static_cast<uint64_t*>(header);
  auto* marks = static_cast<uint8_t*>(local);
  const SettleWords settle = settleWordsAt(settleWordsOf(plan, n));
  if (unread) SCCL_CHECK(startSettledTotals(call, settleWordsOf(plan, n), settle));
  // The header's words travel with a launch: no host buffer a later call could overwrite.
  SCCL_CHECK(kernels.writeWords(own, 0, 0, ctx.fingerprint, ctx.iteration, stream));

  // Steps 2-3.
  SCCL_CHECK(kernels.accumulate(vectors.acc, ctx.config.error_feedback ? vectors.residual : nullptr,
                                ctx.acc_dtype, call.sendbuf, ctx.dtype, ctx.count,
                                own + kSketchNonFinite, stream));
  call.acc = vectors.acc;
  const SketchPlanScratch scratch = sketchPlanScratch(static_cast<uint64_t*>(plan), n);
  if (st.select_nonzero) {
    SCCL_CHECK(kernels.fillZero(scratch.cutoff, sizeof(uint64_t), stream));
    SCCL_CHECK(kernels.markNonzeroBlocks(vectors.acc, ctx.acc_dtype, ctx.count, st.shape.block,
                                         marks, stream));
  } else {
    void* norms = nullptr;
    SCCL_CHECK(device.buffer(DeviceStaging::kBlockNorms,
                             std::max<size_t>(1, blocks) * sizeof(double), &norms));
    SCCL_CHECK(kernels.blockSquaredNorms(vectors.acc, ctx.acc_dtype, ctx.count, st.shape.block,
                                         static_cast<double*>(norms), stream));
    SCCL_CHECK(kernels.markTopBlocks(static_cast<const double*>(norms), blocks, st.max_blocks,
                                     marks, reinterpret_cast<double*>(scratch.cutoff), stream));
  }
  SCCL_CHECK(
      kernels.markedElements(marks, ctx.count, st.shape.block, own + kSketchElements, stream));

  // Steps 4-6.
  SCCL_CHECK(exchange.allGather(call, own, headers, kSketchHeaderWords * sizeof(uint64_t)));
  SCCL_CHECK(exchange.allReduceMaxBytes(call, marks, union_bitmap, blocks));
  const GatherPlanParams params = callPlanParams(ctx);
  SCCL_CHECK(kernels.planSketch(static_cast<const uint64_t*>(headers), params, ctx.count,
                                st.shape.block, static_cast<const uint8_t*>(union_bitmap),
                                static_cast<uint64_t*>(plan), stream));
  // The bound of what this rank's encode lists: its marked elements, from the plan, or without
  // it the most "topk" can mark (K whole blocks).
  size_t listed_bound = std::min<size_t>(ctx.count, size_t(st.max_blocks) * st.shape.block);
  if (unread) {
    call.outcome_on_device = true;  // the plan's counts stay there (sketchDeviceStats)
    call.time_select_us += microsecondsSince(start);
  } else {
    const uint64_t* p = nullptr;
    SCCL_CHECK(readPlan(call, plan, n, &p));
    call.time_select_us += microsecondsSince(start);
    bool handled = false;
    SCCL_CHECK(applyPlanStatus(call, p, &handled));
    if (handled) return scclSuccess;  // discarded for non-finite values
    adoptPlanCounts(call, p);
    listed_bound = size_t(call.k_local);
    PlanSettleArgs cutoff;
    cutoff.plan = p;
    cutoff.threshold = kSettleThresholdSketchCutoff;
    call.threshold = settledThreshold(cutoff);  // 0 for "nonzero"
    if (st.select_nonzero) st.shape.width = sketchTableWidth(ctx.config, ctx.k_target, call.k_max);
  }

  // Steps 7-8.
  const size_t table_elements = size_t(st.shape.rows) * st.shape.width;
  const size_t table_bytes = table_elements * accElementSize(ctx);
  void* table = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kTable, std::max<size_t>(1, table_bytes), &table));
  SCCL_CHECK(kernels.fillZero(table, table_bytes, stream));
  // The CUDA backend sorts listed_bound entries and reads nothing back.
  SCCL_CHECK(kernels.sketchEncode(vectors.acc, ctx.acc_dtype, st.shape, marks, table, listed_bound,
                                  stream));
  SCCL_CHECK(exchange.allReduceSum(call, table, table, table_elements, ctx.acc_dtype));
  const uint32_t divisor = call.op == scclAvg ? uint32_t(n) : 1;
  const auto* global = static_cast<const uint8_t*>(union_bitmap);
  SCCL_CHECK(kernels.sketchDecode(table, ctx.acc_dtype, st.shape, global, divisor, call.recvbuf,
                                  ctx.dtype, stream));
  if (!st.feedback_decode_error) {
    SCCL_CHECK(kernels.updateMarkedBlocks(vectors.acc, ctx.acc_dtype, ctx.count, st.shape.block,
                                          marks, nullptr, stream));
  } else if (ctx.config.error_feedback) {
    void* decoded = nullptr;
    SCCL_CHECK(device.buffer(DeviceStaging::kDecoded,
                             std::max<size_t>(1, ctx.count * accElementSize(ctx)), &decoded));
    SCCL_CHECK(kernels.sketchDecode(table, ctx.acc_dtype, st.shape, global, uint32_t(n), decoded,
                                    ctx.acc_dtype, stream));
    SCCL_CHECK(kernels.updateMarkedBlocks(vectors.acc, ctx.acc_dtype, ctx.count, st.shape.block,
                                          global, decoded, stream));
  }
  if (unread) {
    // The plan's outcome: recvbuf = NaN unless the call completes, and then the residual it
    // started from back into the accumulator, which the caller swaps in.
    PlanSettleArgs a;
    a.plan = static_cast<const uint64_t*>(plan);
    a.threshold = kSettleThresholdSketchCutoff;
    SCCL_CHECK(settleCall(call, vectors, settle, a));
  }
  call.residual_updated = true;
  return scclSuccess;
}

scclResult_t sketchDeviceStats(const ReductionContext& ctx, DeviceStaging& staging,
                               scclSparseStats_t* stats) {
  const size_t n = size_t(ctx.comm->nranks);
  void* plan = nullptr;
  SCCL_CHECK(staging.buffer(DeviceStaging::kPlan, planBytes(n), &plan));
  SettledRead read;
  SCCL_CHECK(readSettled(ctx, staging, plan, gatherPlanWords(n), settleWordsOf(plan, n), &read));
  if (!read.any) return scclSuccess;
  const uint64_t* p = read.plan.data();
  scclSparseStats_t& s = *stats;
  s.iteration = ctx.settled_first_call + read.totals.completed;
  s.nonFinite = p[kPlanOwnNonFinite];
  s.meanAbsDensityError = read.totals.completed == 0
                              ? 0.0
                              : read.totals.sum_abs_density_error / double(read.totals.completed);
  if (read.status != kSyncFreeCompletes) return scclSuccess;  // as the host: counts kept
  for (size_t r = 0; r < n; ++r) ctx.rank_counts[r] = p[kGatherPlanHeaderWords + 2 * r];
  const uint64_t k_global = p[kPlanKGlobal], k_max = p[kPlanMaxK];
  s.kLocal = ctx.rank_counts[size_t(ctx.comm->rank)];
  s.kGlobal = k_global;
  s.kMax = k_max;
  s.density = ctx.count == 0 ? 0.0 : double(k_global) / double(ctx.count);
  s.densityError = double(k_global) / double(ctx.k_target) - 1.0;
  s.gatherInflation = k_global == 0 ? 0.0 : double(n) * double(k_max) / double(k_global);
  s.threshold = read.totals.last_threshold;
  return scclSuccess;
}

}  // namespace sccl
