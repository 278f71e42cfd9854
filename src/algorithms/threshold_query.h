// The estimator query of a reduction's local selection, shared by the gather and sync-free
// reductions so that both ask the estimator the same question for the same range.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "algorithms/reduction_context.h"
#include "estimators/threshold_estimator.h"
#include "kernels/kernels.h"

namespace sccl {

// This rank's share of k for `range`: all of k when every rank searches the whole vector;
// in an exclusive partition its share proportional to the partition's size (at least one if it
// has elements).
inline uint64_t localTarget(const ReductionContext& ctx, IndexRange range) {
  if (!ctx.search.exclusive() || ctx.count == 0) return ctx.k_target;
  uint64_t share =
      uint64_t(std::ceil(double(ctx.k_target) * double(range.size()) / double(ctx.count)));
  return range.size() == 0 ? 0 : std::max<uint64_t>(1, share);
}

// The kernels a call's accumulator is read with: the CPU's on host buffers, the CUDA backend's
// on device buffers.
inline const KernelBackend& callKernels(const SparseCall& call) {
  return call.kernels != nullptr ? *call.kernels : cpuKernels();
}

// The query for a selection over `range` of the call's accumulator, on the call's kernels.
inline ThresholdQuery selectionQuery(const SparseCall& call, IndexRange range) {
  const ReductionContext& ctx = *call.ctx;
  ThresholdQuery query;
  query.kernels = &callKernels(call);
  query.stream = call.stream;
  query.device = call.device;
  query.acc = call.acc;
  query.acc_dtype = ctx.acc_dtype;
  query.range = range;
  query.k_target_local = localTarget(ctx, range);
  query.iteration = ctx.iteration;
  return query;
}

}  // namespace sccl
