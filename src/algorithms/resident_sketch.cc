// The device-resident S2 call: the sketch reduction of sketch_reduction.cc with every per-block
// and per-element step on the kernels' side, for device buffers. The host reads back one plan per
// call (the checks' verdict and the counts, 64 + 16 n bytes); norms, bitmaps, table and decode
// never cross to it.
//
// Paper: K. Ge, Y. Fu, Y. Zhang, Z. Lai, X. Deng, D. Li, "S2 Reducer: High-Performance Sparse
// Communication to Accelerate Distributed Deep Learning" (ICASSP 2022), Algorithm 1; reference
// code GeKeShi/Sparse_Sketch_Reducer. The encode, the table all-reduce and the median decode are
// sketch_reduction.cc's (its header lists where both differ from the reference code).
// Steps of one call on rank r (d_ = the kernels' memory, all on the call's stream):
//  1. r's header = [fingerprint, call number, 0, 0, 0] in one upload of 40 bytes;
//  2. d_acc = d_residual + gradient, the non-finite count into the header (accumulate);
//  3. the block selection into r's bitmap (one byte per block, B blocks): "topk",
//     blockSquaredNorms and markTopBlocks (the K largest non-zero blocks, the cut-off norm into
//     the header's reserved word); "nonzero", markNonzeroBlocks; markedElements, r's count of
//     marked elements, into the header;
//  4. all-gather the headers (40 bytes each) and all-reduce the bitmaps (uint8 max: the union,
//     exact in any order, the transport's own reduction);
//  5. planSketch (kernels/shared/sketch_plan.h): every header checked (call, config, count,
//     non-finite values), every union byte 0 or 1, the union's marked elements;
//  6. the plan read back (64 + 16 n bytes) and the one wait: the host applies a failed check or
//     the non-finite policy before anything is written (errors come back from the call, as on
//     host buffers), observes the counts and, for "nonzero", sizes the table from the largest;
//  7. fillZero and sketchEncode of r's marked blocks into the r x c table, all-reduce of the
//     table (sum in rank order);
//  8. sketchDecode of the union's blocks into recvbuf (divided by n for scclAvg); the residual:
//     r's marked blocks zeroed ("unselected") or the union's blocks less the decoded sum / n
//     ("decode_error");
//  9. the caller swaps residual and accumulator.
// Host read-backs: one (the plan). Waits: one with collectives on the stream (NCCL); over host
// transports one more per collective (StagedExchange): four.
// Bytes on the wire per rank: the host path's, but the header is 40 bytes (the count beside the
// call header): headers (n-1) 40 in, bitmap 2 (n-1)/n B each way, table 2 (n-1)/n r c 4 (8 for
// float64) each way (NCCL: the table's all-reduce is an all-gather and a rank-order sum, for
// bitwise results). Outputs, residuals, counts and cut-offs are the host path's bit for bit.
#include "algorithms/resident_sketch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "algorithms/call_header.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/plan_readback.h"
#include "algorithms/reductions.h"
#include "algorithms/sketch_state.h"
#include "comm/comm.h"
#include "core/error.h"
#include "kernels/shared/sketch_plan.h"
#include "sparsifier/sparsifier.h"

namespace sccl {

bool residentSketchApplies(const scclSparsifier& sp) {
  return std::strcmp(sp.reduction->name, "sketch") == 0 && sp.reduction_state != nullptr;
}

scclResult_t runResidentSketch(SparseCall& call, StreamExchange& exchange, StagedVectors& vectors) {
  scclSparsifier& sp = *call.sp;
  SketchState& st = static_cast<SketchState&>(*sp.reduction_state);
  const KernelBackend& kernels = *call.kernels;
  DeviceStaging& device = *call.device;
  void* stream = call.stream;
  const size_t n = size_t(sp.comm->nranks);
  const auto start = std::chrono::steady_clock::now();
  const size_t blocks = st.shape.blocks();

  // Step 1.
  void *header = nullptr, *headers = nullptr, *plan = nullptr, *local = nullptr,
       *union_bitmap = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kRecord, kSketchHeaderWords * sizeof(uint64_t), &header));
  SCCL_CHECK(
      device.buffer(DeviceStaging::kHeaders, n * kSketchHeaderWords * sizeof(uint64_t), &headers));
  SCCL_CHECK(device.buffer(DeviceStaging::kPlan, sketchPlanWords(n) * sizeof(uint64_t), &plan));
  SCCL_CHECK(device.buffer(DeviceStaging::kLocalBitmap, std::max<size_t>(1, blocks), &local));
  SCCL_CHECK(
      device.buffer(DeviceStaging::kGlobalBitmap, std::max<size_t>(1, blocks), &union_bitmap));
  uint64_t* own = static_cast<uint64_t*>(header);
  auto* marks = static_cast<uint8_t*>(local);
  void* upload_host = nullptr;
  SCCL_CHECK(device.hostBuffer(DeviceStaging::kUploadHost, kSketchHeaderWords * sizeof(uint64_t),
                               &upload_host));
  uint64_t* words = static_cast<uint64_t*>(upload_host);
  std::fill(words, words + kSketchHeaderWords, uint64_t{0});
  words[kRecordFingerprint] = sp.fingerprint;
  words[kRecordSequence] = sp.iteration;
  SCCL_CHECK(device.toDevice(own, words, kSketchHeaderWords * sizeof(uint64_t)));

  // Steps 2-3.
  SCCL_CHECK(kernels.accumulate(vectors.acc, sp.config.error_feedback ? vectors.residual : nullptr,
                                sp.acc_dtype, call.sendbuf, sp.dtype, sp.count,
                                own + kRecordNonFinite, stream));
  call.acc = vectors.acc;
  if (st.select_nonzero) {
    SCCL_CHECK(kernels.markNonzeroBlocks(vectors.acc, sp.acc_dtype, sp.count, st.shape.block, marks,
                                         stream));
  } else {
    void* norms = nullptr;
    SCCL_CHECK(device.buffer(DeviceStaging::kBlockNorms,
                             std::max<size_t>(1, blocks) * sizeof(double), &norms));
    SCCL_CHECK(kernels.blockSquaredNorms(vectors.acc, sp.acc_dtype, sp.count, st.shape.block,
                                         static_cast<double*>(norms), stream));
    SCCL_CHECK(kernels.markTopBlocks(static_cast<const double*>(norms), blocks, st.max_blocks,
                                     marks, reinterpret_cast<double*>(own + kRecordReserved),
                                     stream));
  }
  SCCL_CHECK(
      kernels.markedElements(marks, sp.count, st.shape.block, own + kSketchElements, stream));

  // Steps 4-6.
  SCCL_CHECK(exchange.allGather(call, own, headers, kSketchHeaderWords * sizeof(uint64_t)));
  SCCL_CHECK(exchange.allReduceMaxBytes(call, marks, union_bitmap, blocks));
  const GatherPlanParams params = callPlanParams(sp);
  SCCL_CHECK(kernels.planSketch(static_cast<const uint64_t*>(headers), params, sp.count,
                                st.shape.block, static_cast<const uint8_t*>(union_bitmap),
                                static_cast<uint64_t*>(plan), stream));
  const uint64_t* p = nullptr;
  SCCL_CHECK(readPlan(call, plan, n, &p));
  call.time_select_us += microsecondsSince(start);
  bool handled = false;
  SCCL_CHECK(applyPlanStatus(call, p, &handled));
  if (handled) return scclSuccess;  // discarded for non-finite values
  for (size_t r = 0; r < n; ++r) sp.rank_counts[r] = p[kGatherPlanHeaderWords + 2 * r];
  call.k_local = sp.rank_counts[size_t(sp.comm->rank)];
  call.k_max = p[kPlanMaxK];
  call.k_global = p[kPlanKGlobal];
  if (st.select_nonzero) {
    call.threshold = 0;
    st.shape.width = sketchTableWidth(sp.config, sp.k_target, call.k_max);
  } else {
    double cutoff_sq = 0;
    std::memcpy(&cutoff_sq, &p[kPlanEdge], sizeof(cutoff_sq));
    call.threshold = std::sqrt(cutoff_sq);
  }

  // Steps 7-8.
  const size_t table_elements = size_t(st.shape.rows) * st.shape.width;
  const size_t table_bytes = table_elements * accElementSize(sp);
  void* table = nullptr;
  SCCL_CHECK(device.buffer(DeviceStaging::kTable, std::max<size_t>(1, table_bytes), &table));
  SCCL_CHECK(kernels.fillZero(table, table_bytes, stream));
  SCCL_CHECK(kernels.sketchEncode(vectors.acc, sp.acc_dtype, st.shape, marks, table, stream));
  SCCL_CHECK(exchange.allReduceSum(call, table, table, table_elements, sp.acc_dtype));
  const uint32_t divisor = call.op == scclAvg ? uint32_t(n) : 1;
  const auto* global = static_cast<const uint8_t*>(union_bitmap);
  SCCL_CHECK(kernels.sketchDecode(table, sp.acc_dtype, st.shape, global, divisor, call.recvbuf,
                                  sp.dtype, stream));
  if (!st.feedback_decode_error) {
    SCCL_CHECK(kernels.updateMarkedBlocks(vectors.acc, sp.acc_dtype, sp.count, st.shape.block,
                                          marks, nullptr, stream));
  } else if (sp.config.error_feedback) {
    void* decoded = nullptr;
    SCCL_CHECK(device.buffer(DeviceStaging::kDecoded,
                             std::max<size_t>(1, sp.count * accElementSize(sp)), &decoded));
    SCCL_CHECK(kernels.sketchDecode(table, sp.acc_dtype, st.shape, global, uint32_t(n), decoded,
                                    sp.acc_dtype, stream));
    SCCL_CHECK(kernels.updateMarkedBlocks(vectors.acc, sp.acc_dtype, sp.count, st.shape.block,
                                          global, decoded, stream));
  }
  call.residual_updated = true;
  return scclSuccess;
}

}  // namespace sccl
