// The decisions of a device-resident sync_free call (src/algorithms/resident_sync_free.cc) in
// one-thread kernels: the call's ranges, the check of the gathered slot headers with the
// non-finite policy, the settling of the index check, the end of the call (threshold update,
// ExDyna's rebalancing, the totals, the call number) and the residual copy that depends on the
// outcome. Each is the function of kernels/shared/sync_free_call.h that the CPU backend runs, so
// both backends decide every call alike. Every decision lands in the call's status word.
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/sync_free_call.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

__global__ void beginCall(SyncFreeWords w) {
  sccl::syncFreeCallRanges(w.partitions, w.nranks, *w.sequence, w.ranges);
  *w.nonfinite = 0;
  *w.bad = 0;
}

__global__ void checkCall(const int64_t* gathered, SyncFreeWords w, uint64_t fingerprint,
                          bool nonfinite_is_error) {
  uint64_t raise = 0;
  const uint64_t fault = *static_cast<volatile uint64_t*>(w.fault);
  *w.status = sccl::syncFreeDecide(gathered, w.nranks, w.capacity, fingerprint, *w.sequence,
                                   w.ranges, nonfinite_is_error, fault, &raise);
  raiseFault(w.fault, raise);
}

__global__ void settleCall(SyncFreeWords w) {
  uint64_t raise = 0;
  *w.status = sccl::syncFreeSettle(*w.bad, *w.status, *w.sequence, &raise);
  raiseFault(w.fault, raise);
}

__global__ void endCall(const int64_t* gathered, SyncFreeWords w, uint64_t k_target, bool has_rule,
                        ScalingRule rule, bool has_rebalance, ExDynaRebalanceRule rebalance) {
  sccl::syncFreeEndCall(gathered, w, *w.status, k_target, has_rule ? &rule : nullptr,
                        has_rebalance ? &rebalance : nullptr);
}

__global__ void copyWordsByStatus(uint32_t* dst, const uint32_t* src, size_t words,
                                  const uint32_t* status, bool when_complete) {
  if ((*status == kSyncFreeCompletes) != when_complete) return;
  for (size_t i = globalThread(); i < words; i += gridThreads()) dst[i] = src[i];
}

}  // namespace

cudaError_t syncFreeBeginCall(const SyncFreeWords& w, cudaStream_t stream) {
  beginCall<<<1, 1, 0, stream>>>(w);
  return cudaGetLastError();
}

cudaError_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w, uint64_t fingerprint,
                          bool nonfinite_is_error, cudaStream_t stream) {
  checkCall<<<1, 1, 0, stream>>>(gathered, w, fingerprint, nonfinite_is_error);
  return cudaGetLastError();
}

cudaError_t syncFreeSettle(const SyncFreeWords& w, cudaStream_t stream) {
  settleCall<<<1, 1, 0, stream>>>(w);
  return cudaGetLastError();
}

cudaError_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w, uint64_t k_target,
                            const ScalingRule* rule, const ExDynaRebalanceRule* rebalance,
                            cudaStream_t stream) {
  endCall<<<1, 1, 0, stream>>>(gathered, w, k_target, rule != nullptr,
                               rule != nullptr ? *rule : ScalingRule{}, rebalance != nullptr,
                               rebalance != nullptr ? *rebalance : ExDynaRebalanceRule{});
  return cudaGetLastError();
}

cudaError_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                         bool when_complete, cudaStream_t stream) {
  const size_t words = bytes / sizeof(uint32_t);  // float32 or float64 vectors: whole words
  if (words == 0) return cudaSuccess;
  copyWordsByStatus<<<gridFor(words), kThreads, 0, stream>>>(
      static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), words, status, when_complete);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
