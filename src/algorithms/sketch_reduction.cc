// sketch: the S2 Reducer's reduction (preset s2): its state (block and table shape, hash keys,
// block selection, residual rule), the table width, the masks of what a call sent, and the host
// call, which runs the S2 call of sketch_call.cc (the paper, steps and bytes are there) on host
// buffers with the CPU backend, host memory as the kernels' memory and the communicator's
// transport in place: one call path for host and device buffers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/reductions.h"
#include "algorithms/sketch_call.h"
#include "algorithms/sketch_state.h"
#include "algorithms/stream_exchange.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "kernels/shared/count_sketch.h"
#include "algorithms/reduction_context.h"

namespace sccl {

uint64_t sketchTableWidth(const ResolvedSparseConfig& config, uint64_t k_target, uint64_t k_max) {
  const bool select_nonzero = config.sketch_block_selection == "nonzero";
  const double width = std::ceil(config.sketch_lambda * double(select_nonzero ? k_max : k_target));
  return width >= double(kMaxSketchWidth) ? kMaxSketchWidth
                                          : std::max<uint64_t>(1, uint64_t(width));
}

scclResult_t prepareSketchReduction(const ReductionContext& ctx) {
  const ResolvedSparseConfig& c = ctx.config;
  auto st = std::make_unique<SketchState>();
  const bool select_nonzero = c.sketch_block_selection == "nonzero";
  // "nonzero": one bucket until the first call's counts are known.
  const double width = select_nonzero ? 1.0 : std::ceil(c.sketch_lambda * double(ctx.k_target));
  SCCL_REQUIRE_ARG(width <= double(kMaxSketchWidth),
                   "sketchLambda %g: the sketch would be %.0f buckets wide for k = %llu (at most "
                   "%llu)",
                   c.sketch_lambda, width, static_cast<unsigned long long>(ctx.k_target),
                   static_cast<unsigned long long>(kMaxSketchWidth));
  st->shape.count = ctx.count;
  st->shape.block = size_t(c.sketch_block_size);
  st->shape.rows = uint32_t(c.sketch_rows);
  st->shape.width = select_nonzero ? 1 : sketchTableWidth(c, ctx.k_target, 0);
  st->keys.resize(st->shape.rows);
  for (uint32_t j = 0; j < st->shape.rows; ++j)
    st->keys[j] = sketchRowKey(uint64_t(c.sketch_seed), j);
  st->shape.row_keys = st->keys.data();
  const size_t blocks = st->shape.blocks();
  st->max_blocks = std::min<uint64_t>(
      blocks, std::max<uint64_t>(1, (ctx.k_target + st->shape.block - 1) / st->shape.block));
  st->select_nonzero = select_nonzero;
  st->feedback_decode_error = c.sketch_feedback == "decode_error";
  st->global.assign(blocks, 0);
  SCCL_INFO(
      LogSubsys::Coll, "sketch: %zu blocks of %zu, %u x %llu table, %s selection (K = %llu)",
      blocks, st->shape.block, st->shape.rows, static_cast<unsigned long long>(st->shape.width),
      st->select_nonzero ? "nonzero" : "topk", static_cast<unsigned long long>(st->max_blocks));
  ctx.reduction_state = std::move(st);
  return scclSuccess;
}

scclResult_t maskSketchBlocks(const ReductionContext& ctx, void* buffer, scclDataType_t dtype) {
  const SketchState& st = static_cast<const SketchState&>(*ctx.reduction_state);
  const size_t element = dataTypeSize(dtype);
  for (size_t b = 0; b < st.global.size(); ++b) {
    if (st.global[b] == 0) continue;
    const size_t begin = b * st.shape.block;
    const size_t end = std::min(st.shape.count, begin + st.shape.block);
    std::memset(static_cast<unsigned char*>(buffer) + begin * element, 0, (end - begin) * element);
  }
  return scclSuccess;
}

void sketchSentIndices(const ReductionContext& ctx, std::vector<int64_t>* out) {
  const SketchState& st = static_cast<const SketchState&>(*ctx.reduction_state);
  out->clear();
  for (size_t b = 0; b < st.global.size(); ++b) {
    if (st.global[b] == 0) continue;
    const size_t end = std::min(st.shape.count, (b + 1) * st.shape.block);
    for (size_t i = b * st.shape.block; i < end; ++i) out->push_back(int64_t(i));
  }
}

scclResult_t runSketchReduction(SparseCall& call) {
  const ReductionContext& ctx = *call.ctx;
  SketchState& st = static_cast<SketchState&>(*ctx.reduction_state);
  // The reduction accumulates itself (ReductionEntry::fused_accumulate): the residual comes in
  // call.residual, the accumulator is call.acc.
  StagedVectors vectors{const_cast<void*>(call.residual), call.acc, nullptr};
  if (call.device != nullptr) {
    // Device buffers without a stream exchange (runStagedCall's fallback): the call's kernels
    // and staging, each collective staged through the host transport.
    StagedExchange exchange(*call.device);
    return runSketchCall(call, exchange, vectors);
  }
  call.kernels = &cpuKernels();
  call.device = &ctx.host_staging;
  call.stream = nullptr;
  HostExchange exchange;
  const scclResult_t result = runSketchCall(call, exchange, vectors);
  call.kernels = nullptr;
  call.device = nullptr;
  if (result != scclSuccess || call.step_discarded) return result;
  // What scclSparsifierMaskSent zeroes: the union of this call.
  void* union_bitmap = nullptr;
  SCCL_CHECK(
      ctx.host_staging.buffer(DeviceStaging::kGlobalBitmap, st.global.size(), &union_bitmap));
  std::copy_n(static_cast<const uint8_t*>(union_bitmap), st.global.size(), st.global.begin());
  return scclSuccess;
}

}  // namespace sccl
