// The CUDA backend's entries of the calls that decide on the device (the sync-free call's slot
// selection, words and status-guarded commit, the union plan, S2's settled plan): argument checks
// as the CPU backend's, then the kernels of kernels/sync_free*.cu, kernels/resident_union.cu and
// kernels/plan_settle.cu. See cuda_kernels.h.
#include <cstdint>

#include "cuda/cuda_kernels.h"
#include "cuda/cuda_kernels_entry.h"
#include "cuda/dispatch.h"
#include "kernels/dtype_checks.h"

namespace sccl {

scclResult_t CudaKernels::syncFreeSelect(const void* acc, scclDataType_t acc_dtype,
                                         const uint64_t* bounds, size_t items,
                                         const SyncFreeCandidates& candidates,
                                         const double* threshold, size_t keep, size_t capacity,
                                         const uint64_t* nonfinite, uint64_t fingerprint,
                                         const uint64_t* sequence, int64_t* slot,
                                         void* stream) const {
  SCCL_CHECK(requireAccType(acc_dtype, "syncFreeSelect"));
  // The CUDA pass (accumulateSelect) keeps no candidates at a threshold held in device memory,
  // so no call hands any here; the selection scans the range (capped_selection.cuh).
  SCCL_REQUIRE_ARG(candidates.idx == nullptr,
                   "syncFreeSelect: the CUDA backend selects from the range, not from candidates");
  SCCL_REQUIRE_ARG(keep >= 1 && keep <= capacity && bounds != nullptr && sequence != nullptr,
                   "syncFreeSelect: keep %zu, capacity %zu, bounds %p, sequence %p", keep, capacity,
                   static_cast<const void*>(bounds), static_cast<const void*>(sequence));
  const cuda_dispatch::SlotHeader header{fingerprint, sequence};
  return withTemp("syncFreeSelect", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::syncFreeSelect(temp, bytes, acc, acc_dtype, bounds, items, threshold,
                                         keep, capacity, nonfinite, header, slot,
                                         asCudaStream(stream));
  });
}

scclResult_t CudaKernels::planUnion(const uint64_t* slots, const GatherPlanParams& params,
                                    size_t capacity, const uint64_t* ranges, int64_t* global,
                                    uint64_t* plan, void* stream) const {
  SCCL_REQUIRE_ARG(capacity >= 1 && params.nranks * capacity <= size_t(INT32_MAX),
                   "planUnion: %llu ranks of %zu entries",
                   static_cast<unsigned long long>(params.nranks), capacity);
  return withTemp("planUnion", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::planUnion(temp, bytes, slots, params, capacity, ranges, global, plan,
                                    asCudaStream(stream));
  });
}

scclResult_t CudaKernels::syncFreeBeginCall(const SyncFreeWords& w, void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::syncFreeBeginCall(w, asCudaStream(stream)), "syncFreeBeginCall");
  return scclSuccess;
}

scclResult_t CudaKernels::syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w,
                                        uint64_t fingerprint, bool nonfinite_is_error,
                                        void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::syncFreeCheck(gathered, w, fingerprint, nonfinite_is_error,
                                               asCudaStream(stream)),
                  "syncFreeCheck");
  return scclSuccess;
}

scclResult_t CudaKernels::syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                              const int64_t* gathered, const SyncFreeWords& w,
                                              void* values, void* stream) const {
  SCCL_CHECK(requireAccType(acc_dtype, "syncFreeGatherSlots"));
  SCCL_CUDA_CHECK(
      cuda_dispatch::syncFreeGatherSlots(acc, acc_dtype, gathered, w, values, asCudaStream(stream)),
      "syncFreeGatherSlots");
  return scclSuccess;
}

scclResult_t CudaKernels::syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count,
                                        void* acc, scclDataType_t acc_dtype,
                                        const int64_t* gathered, const SyncFreeWords& w,
                                        const void* values, uint32_t divisor, void* stream) const {
  SCCL_CHECK(requireAccType(acc_dtype, "syncFreeWrite"));
  SCCL_CUDA_CHECK(cuda_dispatch::syncFreeWrite(recv, recv_dtype, count, acc, acc_dtype, gathered, w,
                                               values, divisor, asCudaStream(stream)),
                  "syncFreeWrite");
  return scclSuccess;
}

scclResult_t CudaKernels::settlePlan(const PlanSettleArgs& a, void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::settlePlan(a, asCudaStream(stream)), "settlePlan");
  return scclSuccess;
}

scclResult_t CudaKernels::writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2,
                                     uint64_t w3, void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::setWords(dst, w0, w1, w2, w3, asCudaStream(stream)), "writeWords");
  return scclSuccess;
}

scclResult_t CudaKernels::copyByStatus(void* dst, const void* src, size_t bytes,
                                       const uint32_t* status, bool when_complete,
                                       void* stream) const {
  SCCL_REQUIRE_ARG(bytes % 4 == 0, "copyByStatus: %zu bytes", bytes);
  SCCL_CUDA_CHECK(
      cuda_dispatch::copyByStatus(dst, src, bytes, status, when_complete, asCudaStream(stream)),
      "copyByStatus");
  return scclSuccess;
}

scclResult_t CudaKernels::syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w,
                                          uint64_t k_target, const ScalingRule* rule,
                                          const ExDynaRebalanceRule* rebalance,
                                          void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::syncFreeEndCall(gathered, w, k_target, rule, rebalance, asCudaStream(stream)),
      "syncFreeEndCall");
  return scclSuccess;
}

}  // namespace sccl
