// One call of the gather or sketch reduction (gather_reduction.cc, sketch_reduction.cc) on an
// accumulator that lives with `kernels` rather than in the sparsifier's host buffers: accumulate,
// run the reduction with the call's arrays staged through `staging`, swap residual and
// accumulator when the step completes.
// The CUDA path (cuda/device_staged_call.cc) runs it with the CUDA backend and device buffers;
// the unit tests run it with the CPU kernels and a staging that keeps separate copies, which
// checks every copy the reduction makes against the plain host run, bit for bit.
#pragma once

#include <cstdint>

#include "algorithms/algorithm.h"
#include "kernels/device_staging.h"
#include "kernels/kernels.h"

namespace sccl {

// Residual, accumulator and the non-finite word in the kernels' memory. residual and acc trade
// roles after a completed call (error feedback on).
// fault: the resident gather's index-check word (kernels/shared/gather_plan.h), kNoIndexFault
// from the sparsifier's first device call on; sticky. published_fault (may be null): where the
// kernels copy a set fault for the host to read without waiting (scclSparsifierGetAsyncError).
struct StagedVectors {
  void* residual = nullptr;
  void* acc = nullptr;
  uint64_t* nonfinite = nullptr;
  uint32_t* fault = nullptr;
  uint32_t* published_fault = nullptr;
  // The sticky fault word of the calls that read nothing back (S2 "topk" and CLT-k on device
  // buffers, algorithms/settled_call.h; kernels/shared/sync_free_async_fault.h), the kernels'
  // address of memory the host reads without waiting (mapped page-locked memory on CUDA). Null:
  // those calls read their plan back.
  uint64_t* async_fault = nullptr;
};

// The accumulating pass of a call on `vectors` (KernelBackend::accumulateSelect): acc = residual
// (with error feedback) + the call's gradient, the non-finite count into `nonfinite` (the
// kernels' memory); no range, candidates or histogram yet (the caller adds what it needs).
AccumulateSelectArgs accumulatePass(const SparseCall& call, const StagedVectors& vectors,
                                    uint64_t* nonfinite);

// Whether a call on device buffers (a StagedVectors with async_fault) reads nothing back: S2 with
// its "topk" selection (sketch_call.h) and CLT-k (resident_gather.h).
bool callReadsNothingBack(const ReductionContext& ctx);

// The statistics of the calls that read nothing back, from the kernels' memory (waits for
// `staging`): sketchDeviceStats or residentLeaderStats; nothing for other calls.
scclResult_t settledCallStats(const ReductionContext& ctx, DeviceStaging& staging,
                              scclSparseStats_t* stats);

class StreamExchange;

// exchange: the collectives of the device-resident gather call (algorithms/resident_gather.h),
// which a sparsifier it applies to then runs; null: every reduction through the staging.
scclResult_t runStagedCall(SparseCall& call, const KernelBackend& kernels, DeviceStaging& staging,
                           StagedVectors& vectors, void* stream, StreamExchange* exchange = nullptr);

}  // namespace sccl
