// The settling of a call whose plan the host does not read (KernelBackend::settlePlan):
// the decision and the totals in a one-thread kernel running kernels/shared/plan_settle.h's
// functions (the CPU backend's own), then recvbuf = NaN unless the call completes.
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/plan_settle.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

__global__ void settleKernel(PlanSettleArgs a) {
  uint64_t raise = 0;
  const uint64_t fault = *static_cast<volatile uint64_t*>(a.fault);
  *a.status = sccl::settlePlanStatus(a, fault, &raise);
  raiseFault(a.fault, raise);
  sccl::settlePlanTotals(a, *a.status);
}

template <typename Word>
__global__ void nanUnlessCompletes(Word* out, size_t count, Word nan, const uint32_t* status) {
  if (*status == kSyncFreeCompletes) return;
  for (size_t i = globalThread(); i < count; i += gridThreads()) out[i] = nan;
}

}  // namespace

cudaError_t settlePlan(const PlanSettleArgs& a, cudaStream_t stream) {
  settleKernel<<<1, 1, 0, stream>>>(a);
  cudaError_t result = cudaGetLastError();
  if (result != cudaSuccess || a.count == 0) return result;
  // The host's patterns (fillWithNaN): float32 and float64 quiet NaN, converted by
  // kernels/shared/half.h.
  const float nan = bitsToFloat(0x7fc00000u);
  const unsigned grid = gridFor(a.count);
  switch (a.recv_dtype) {
    case scclFloat64:
      nanUnlessCompletes<<<grid, kThreads, 0, stream>>>(static_cast<uint64_t*>(a.recv), a.count,
                                                        uint64_t(0x7ff8000000000000ull), a.status);
      break;
    case scclFloat16:
      nanUnlessCompletes<<<grid, kThreads, 0, stream>>>(static_cast<uint16_t*>(a.recv), a.count,
                                                        floatToFp16(nan), a.status);
      break;
    case scclBfloat16:
      nanUnlessCompletes<<<grid, kThreads, 0, stream>>>(static_cast<uint16_t*>(a.recv), a.count,
                                                        floatToBf16(nan), a.status);
      break;
    default:
      nanUnlessCompletes<<<grid, kThreads, 0, stream>>>(static_cast<uint32_t*>(a.recv), a.count,
                                                        uint32_t(0x7fc00000u), a.status);
      break;
  }
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
