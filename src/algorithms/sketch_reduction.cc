// sketch: the data path of the S2 Reducer (preset s2).
//
// Paper: K. Ge, Y. Fu, Y. Zhang, Z. Lai, X. Deng, D. Li, "S2 Reducer: High-Performance Sparse
// Communication to Accelerate Distributed Deep Learning" (Algorithm 1). Reference code:
// GeKeShi/Sparse_Sketch_Reducer, Sketch_Embed_Reducer + CSVec (LSTM/gradient_reducers.py,
// LSTM/codings/cs_embedding/csvec.py).
//
// Steps of one call on every rank (acc = residual + gradient is already computed):
//  1. blocks of B = sketchBlockSize elements (the last one may be shorter). Selection into a
//     local bitmap, one byte per block: "topk" marks the K = min(blocks, ceil(k / B)) blocks of
//     largest L2 norm among those that are not all zero (ties to the lower block index, a NaN
//     norm counts as the largest); "nonzero" marks every block holding a non-zero value.
//  2. all-gather a 32-byte header (k_i = elements in the marked blocks, non-finite count, config
//     fingerprint, call number): mismatched calls are scclInvalidUsage, NaN/Inf anywhere follows
//     the scclNonFinitePolicy_t on every rank.
//  3. zero the r x c table (every call) and encode: table[j][h_j(i)] += s_j(i) acc[i] for every
//     non-zero acc[i] in a marked block (hashes: count_sketch.h). Width, the paper's
//     lambda = c / (non-zeros): "topk" selection sends about k elements, so c = ceil(lambda k)
//     at creation; "nonzero" selection sends whatever is non-zero, so c = ceil(lambda max_r k_r)
//     from this call's headers (k_r = elements in rank r's marked blocks; the same on every
//     rank, at most 2^32 - 1), and the table grows only when a call needs more than any before.
//  4. all-reduce the table (float32, or float64 for float64 data; rank-order sum, so the result
//     is the sketch of the sum of the ranks' selections and bitwise the same everywhere) and the
//     bitmap (uint8, max). Every byte received must be 0 or 1 (scclRemoteError otherwise).
//  5. decode: for every element of every block marked by some rank, the median over the r rows
//     of s_j(i) table[j][h_j(i)], divided by n for scclAvg, written to recvbuf in its dtype;
//     zeros elsewhere.
//  6. residual ("unselected", default): acc with this rank's marked blocks zeroed: what was not
//     transmitted stays; what was encoded is gone, its decode error is not fed back, and values
//     of blocks that only other ranks marked stay too (they were not sent: unlike the gather
//     reduction, the sketch travels in one round, before the union is known).
//     "decode_error": in every block of the union, residual = acc - decoded sum / n, elsewhere
//     acc. Summed over ranks the residuals then hold sum(acc) - decoded sum, so the gradient sum
//     is conserved: sum of gradients = sum of outputs + sum of residuals, exactly in real
//     arithmetic and up to the roundings of acc - decoded / n in floating point (none when the
//     values are dyadic and fit the mantissa, e.g. integers with n = 2 for a few calls). The
//     price: a rank's residual now carries its share of the other ranks' values and of the
//     collision error, not only its own unsent values.
//
// Bitmap reduction: uint8 with max is a bitwise OR of 0/1 flags and cannot overflow at any rank
// count, at 1 byte per block. A uint8 sum would wrap to 0 when a multiple of 256 ranks mark the
// same block (the block would vanish); an int32 sum is safe up to 2^31 ranks but moves 4 bytes
// per block. A packed bit per block would need a bitwise-OR all-reduce, which the transports do
// not offer.
//
// Bytes per rank: header 32 (n-1) in; table 2 (n-1)/n r c 4 (8 for float64) each way; bitmap
// 2 (n-1)/n ceil(count / B) each way. Independent of the overlap between ranks, unlike the
// all-gather of (index, value) pairs whose index traffic grows with n max(k_i).
//
// On device buffers (cuda/device_staged_call.cc) the same code runs with the CUDA kernels: the
// block selection runs on the device and the marked blocks come to the host for the header, the
// bitmaps go back, the table is encoded, all-reduced and decoded on the device
// (kernels/device_staging.h).
// Differences from the reference code: the decoded gradient is written to recvbuf (the
// reference assigns it to a local and drops it); the table is zeroed every call (the reference
// table is a running sum with reuse_sketch); every sparsifier owns its sketch (the reference
// shares one across tensors); r rows with a median (the reference hard-codes r = 1, and its
// GNMT copy uses bucket i mod c and a mean); seeded 64-bit mixing hashes without overflow (the
// reference's int64 polynomial hashes wrap); the bitmap is uint8/max, not float32/sum; error
// feedback is offered (the reference has none); any block size, with a partial last block.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "algorithms/call_header.h"
#include "kernels/shared/count_sketch.h"
#include "kernels/device_staging.h"
#include "algorithms/exchange_accounting.h"
#include "algorithms/reductions.h"
#include "algorithms/sketch_state.h"
#include "algorithms/threshold_query.h"
#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

// Elements in the marked blocks.
uint64_t markedElements(const SketchShape& shape, const std::vector<uint8_t>& bitmap) {
  const size_t blocks = shape.blocks();
  uint64_t elements = 0;
  for (size_t b = 0; b < blocks; ++b) {
    if (bitmap[b] != 0) elements += std::min(shape.count, (b + 1) * shape.block) - b * shape.block;
  }
  return elements;
}

// Step 1, "topk": the K non-zero blocks of largest norm; *cutoff_norm = the K-th norm. On device
// buffers the norms stay on the device (KernelBackend::markTopBlocks selects there) and only the
// bitmap and the cut-off (after the norms in their buffer) come to the host.
scclResult_t selectTopBlocks(SparseCall& call, SketchState& st, double* cutoff_norm) {
  const size_t blocks = st.shape.blocks();
  const KernelBackend& kernels = callKernels(call);
  void* norms = nullptr;
  void* marks = nullptr;
  SCCL_CHECK(stagedArray(call.device, DeviceStaging::kBlockNorms, st.norms.data(),
                         (blocks + 1) * sizeof(double), false, &norms));
  SCCL_CHECK(stagedArray(call.device, DeviceStaging::kLocalBitmap, st.local.data(), blocks, false,
                         &marks));
  SCCL_CHECK(kernels.blockSquaredNorms(call.acc, call.sp->acc_dtype, st.shape.count, st.shape.block,
                                       static_cast<double*>(norms), call.stream));
  double* cutoff = static_cast<double*>(norms) + blocks;
  SCCL_CHECK(kernels.markTopBlocks(static_cast<const double*>(norms), blocks, st.max_blocks,
                                   static_cast<uint8_t*>(marks), cutoff, call.stream));
  SCCL_CHECK(unstageArray(call.device, st.local.data(), marks, blocks));
  double cutoff_sq = st.norms[blocks];
  SCCL_CHECK(unstageArray(call.device, &cutoff_sq, cutoff, sizeof(double)));
  *cutoff_norm = std::sqrt(cutoff_sq);
  return scclSuccess;
}

// Steps 3 and 4; *table and *global are where the kernels find the reduced table and the union.
scclResult_t reduceSketch(SparseCall& call, SketchState& st, void** table, uint8_t** global) {
  scclSparsifier& sp = *call.sp;
  const KernelBackend& kernels = callKernels(call);
  const size_t table_elements = size_t(st.shape.rows) * st.shape.width;
  const size_t table_bytes = table_elements * accElementSize(sp);
  const size_t blocks = st.shape.blocks();
  void* local = nullptr;
  SCCL_CHECK(
      stagedArray(call.device, DeviceStaging::kTable, st.table.data(), table_bytes, false, table));
  SCCL_CHECK(
      stagedArray(call.device, DeviceStaging::kLocalBitmap, st.local.data(), blocks, true, &local));
  SCCL_CHECK(kernels.fillZero(*table, table_bytes, call.stream));
  SCCL_CHECK(kernels.sketchEncode(call.acc, sp.acc_dtype, st.shape,
                                  static_cast<const uint8_t*>(local), *table, call.stream));
  if (call.device != nullptr) SCCL_CHECK(call.device->synchronize());
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allReduce(*table, *table, table_elements, sp.acc_dtype, ReduceOp::Sum);
  }));
  countAllReduce(call, table_elements * accElementSize(sp));
  *global = st.global.data();
  if (blocks == 0) return scclSuccess;
  std::copy(st.local.begin(), st.local.end(), st.global.begin());
  SCCL_CHECK(timedCollective(call, [&](Transport& t) {
    return t.allReduce(st.global.data(), st.global.data(), blocks, scclUint8, ReduceOp::Max);
  }));
  countAllReduce(call, blocks);
  for (size_t b = 0; b < blocks; ++b) {
    if (st.global[b] > 1) {
      return fail(scclRemoteError,
                  "sketch bitmap: block %zu holds %u after the all-reduce (a "
                  "peer sent a byte other than 0 or 1)",
                  b, unsigned(st.global[b]));
    }
  }
  void* union_bitmap = nullptr;
  SCCL_CHECK(stagedArray(call.device, DeviceStaging::kGlobalBitmap, st.global.data(), blocks, true,
                         &union_bitmap));
  *global = static_cast<uint8_t*>(union_bitmap);
  return scclSuccess;
}

}  // namespace

uint64_t sketchTableWidth(const ResolvedSparseConfig& config, uint64_t k_target, uint64_t k_max) {
  const bool select_nonzero = config.sketch_block_selection == "nonzero";
  const double width = std::ceil(config.sketch_lambda * double(select_nonzero ? k_max : k_target));
  return width >= double(kMaxSketchWidth) ? kMaxSketchWidth
                                          : std::max<uint64_t>(1, uint64_t(width));
}

scclResult_t prepareSketchReduction(scclSparsifier& sp) {
  const ResolvedSparseConfig& c = sp.config;
  auto st = std::make_unique<SketchState>();
  const bool select_nonzero = c.sketch_block_selection == "nonzero";
  // "nonzero": one bucket until the first call's counts are known.
  const double width = select_nonzero ? 1.0 : std::ceil(c.sketch_lambda * double(sp.k_target));
  SCCL_REQUIRE_ARG(width <= double(kMaxSketchWidth),
                   "sketchLambda %g: the sketch would be %.0f buckets wide for k = %llu (at most "
                   "%llu)",
                   c.sketch_lambda, width, static_cast<unsigned long long>(sp.k_target),
                   static_cast<unsigned long long>(kMaxSketchWidth));
  st->shape.count = sp.count;
  st->shape.block = size_t(c.sketch_block_size);
  st->shape.rows = uint32_t(c.sketch_rows);
  st->shape.width = select_nonzero ? 1 : sketchTableWidth(c, sp.k_target, 0);
  st->keys.resize(st->shape.rows);
  for (uint32_t j = 0; j < st->shape.rows; ++j)
    st->keys[j] = sketchRowKey(uint64_t(c.sketch_seed), j);
  st->shape.row_keys = st->keys.data();
  const size_t blocks = st->shape.blocks();
  st->max_blocks = std::min<uint64_t>(
      blocks, std::max<uint64_t>(1, (sp.k_target + st->shape.block - 1) / st->shape.block));
  st->select_nonzero = select_nonzero;
  st->feedback_decode_error = c.sketch_feedback == "decode_error";
  st->local.assign(blocks, 0);
  st->global.assign(blocks, 0);
  if (!st->select_nonzero) {
    st->norms.assign(blocks + 1, 0.0);
  }
  st->table.resize(size_t(st->shape.rows) * st->shape.width * accElementSize(sp));
  if (st->feedback_decode_error && sp.config.error_feedback)
    st->decoded.resize(sp.count * accElementSize(sp));
  SCCL_INFO(
      LogSubsys::Coll, "sketch: %zu blocks of %zu, %u x %llu table, %s selection (K = %llu)",
      blocks, st->shape.block, st->shape.rows, static_cast<unsigned long long>(st->shape.width),
      st->select_nonzero ? "nonzero" : "topk", static_cast<unsigned long long>(st->max_blocks));
  sp.reduction_state = std::move(st);
  return scclSuccess;
}

scclResult_t maskSketchBlocks(const scclSparsifier& sp, void* buffer, scclDataType_t dtype) {
  const SketchState& st = static_cast<const SketchState&>(*sp.reduction_state);
  const size_t element = dataTypeSize(dtype);
  for (size_t b = 0; b < st.global.size(); ++b) {
    if (st.global[b] == 0) continue;
    const size_t begin = b * st.shape.block;
    const size_t end = std::min(st.shape.count, begin + st.shape.block);
    std::memset(static_cast<unsigned char*>(buffer) + begin * element, 0, (end - begin) * element);
  }
  return scclSuccess;
}

void sketchSentIndices(const scclSparsifier& sp, std::vector<int64_t>* out) {
  const SketchState& st = static_cast<const SketchState&>(*sp.reduction_state);
  out->clear();
  for (size_t b = 0; b < st.global.size(); ++b) {
    if (st.global[b] == 0) continue;
    const size_t end = std::min(st.shape.count, (b + 1) * st.shape.block);
    for (size_t i = b * st.shape.block; i < end; ++i) out->push_back(int64_t(i));
  }
}

scclResult_t runSketchReduction(SparseCall& call) {
  scclSparsifier& sp = *call.sp;
  SketchState& st = static_cast<SketchState&>(*sp.reduction_state);
  const KernelBackend& kernels = callKernels(call);
  auto start = std::chrono::steady_clock::now();
  if (st.select_nonzero) {
    void* marked = nullptr;
    const size_t blocks = st.shape.blocks();
    SCCL_CHECK(stagedArray(call.device, DeviceStaging::kLocalBitmap, st.local.data(), blocks, false,
                           &marked));
    SCCL_CHECK(kernels.markNonzeroBlocks(call.acc, sp.acc_dtype, sp.count, st.shape.block,
                                         static_cast<uint8_t*>(marked), call.stream));
    SCCL_CHECK(unstageArray(call.device, st.local.data(), marked, blocks));
    call.threshold = 0;
  } else {
    SCCL_CHECK(selectTopBlocks(call, st, &call.threshold));
  }
  call.k_local = markedElements(st.shape, st.local);
  call.time_select_us +=
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();

  // A rank marks at most every element of the vector.
  std::vector<CallHeader> headers;
  SCCL_CHECK(exchangeCallHeaders(
      call, [&](size_t) -> uint64_t { return sp.count; }, &headers));
  if (anyNonFinite(headers)) return applyNonFinitePolicy(call, headers);
  call.k_max = 0;
  for (size_t r = 0; r < headers.size(); ++r) {
    sp.rank_counts[r] = headers[r].k_local;
    call.k_max = std::max(call.k_max, headers[r].k_local);
  }
  if (st.select_nonzero) {
    st.shape.width = sketchTableWidth(sp.config, sp.k_target, call.k_max);
    // Reallocates only beyond the largest table so far (AlignedBuffer keeps its capacity).
    st.table.resize(size_t(st.shape.rows) * st.shape.width * accElementSize(sp));
  }
  void* table = nullptr;
  uint8_t* global = nullptr;
  SCCL_CHECK(reduceSketch(call, st, &table, &global));
  call.k_global = markedElements(st.shape, st.global);

  const uint32_t divisor = call.op == scclAvg ? uint32_t(sp.comm->nranks) : 1;
  SCCL_CHECK(kernels.sketchDecode(table, sp.acc_dtype, st.shape, global, divisor, call.recvbuf,
                                  sp.dtype, call.stream));
  if (st.feedback_decode_error) {
    if (sp.config.error_feedback) {
      void* decoded = nullptr;
      SCCL_CHECK(stagedArray(call.device, DeviceStaging::kDecoded, st.decoded.data(),
                             sp.count * accElementSize(sp), false, &decoded));
      SCCL_CHECK(kernels.sketchDecode(table, sp.acc_dtype, st.shape, global,
                                      uint32_t(sp.comm->nranks), decoded, sp.acc_dtype,
                                      call.stream));
      SCCL_CHECK(kernels.updateMarkedBlocks(call.acc, sp.acc_dtype, sp.count, st.shape.block,
                                            global, decoded, call.stream));
    }
  } else {
    void* local = nullptr;  // this rank's marked blocks, already on the device since the encode
    SCCL_CHECK(stagedArray(call.device, DeviceStaging::kLocalBitmap, st.local.data(),
                           st.shape.blocks(), false, &local));
    SCCL_CHECK(kernels.updateMarkedBlocks(call.acc, sp.acc_dtype, sp.count, st.shape.block,
                                          static_cast<const uint8_t*>(local), nullptr,
                                          call.stream));
  }
  call.residual_updated = true;
  return scclSuccess;
}

}  // namespace sccl
