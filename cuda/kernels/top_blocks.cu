// S2's "topk" block selection on the GPU (KernelBackend::markTopBlocks): the max_blocks blocks of
// largest squared norm among those above zero, a NaN norm as +inf, ties to the lower block index,
// bitwise the CPU's nth_element selection (kernels/cpu/top_blocks.cc). capped_selection.cuh
// finds them over the norms' bit patterns (non-negative doubles order as their patterns) and
// marks each kept block; the cut-off is found in every case (need_cut), since the caller reports
// the keep-th norm, written to the kernels' memory (nothing waits). The first version brought
// every norm to the host (8 bytes per block) and ran nth_element there: 19 ms of a 22 ms S2 call
// at 26M float32 (812,500 blocks of 32) on an H100.
#include "cuda/dispatch.h"
#include "cuda/kernels/capped_selection.cuh"
#include "cuda/kernels/device_common.cuh"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr uint64_t kInfinityBits = 0x7ff0000000000000ull;

struct NormKeys {
  const double* sq;
  struct Resolved {
    const double* sq;
    __device__ bool key(size_t b, uint64_t* k) const {
      const double v = sq[b];
      if (v != v) {
        *k = kInfinityBits;
        return true;
      }
      if (!(v > 0)) return false;
      *k = uint64_t(__double_as_longlong(v));
      return true;
    }
  };
  __device__ Resolved resolve() const { return {sq}; }
};

struct MarkBlock {
  uint8_t* marks;
  __device__ void operator()(uint64_t, size_t b) const { marks[b] = 1; }
};

// The keep-th norm's pattern, or 0 when no block was kept, into the kernels' memory.
__global__ void writeCutoff(const capped::CutState* state, double* cutoff_sq) {
  const uint64_t bits = state->total > 0 ? state->prefix : 0;
  *cutoff_sq = __longlong_as_double((long long)bits);
}

}  // namespace

cudaError_t markTopBlocks(void* temp, size_t* temp_bytes, const double* sq, size_t blocks,
                          size_t max_blocks, uint8_t* marks, double* cutoff_sq,
                          cudaStream_t stream) {
  capped::Carver carve{static_cast<char*>(temp)};
  capped::CutBuffers buffers;
  cudaError_t status = capped::carveCutBuffers(carve, blocks, &buffers);
  if (status != cudaSuccess) return status;
  if (temp == nullptr) {
    *temp_bytes = carve.used;
    return cudaSuccess;
  }
  if (blocks == 0 || max_blocks == 0) {
    status = cudaMemsetAsync(cutoff_sq, 0, sizeof(double), stream);
    if (status != cudaSuccess || blocks == 0) return status;
    return cudaMemsetAsync(marks, 0, blocks, stream);
  }
  status = cudaMemsetAsync(marks, 0, blocks, stream);
  if (status != cudaSuccess) return status;
  // A positive double has 63 significant pattern bits (the sign is 0).
  status = capped::cappedSelect(buffers, NormKeys{sq}, blocks, 63, max_blocks, true,
                                MarkBlock{marks}, stream);
  if (status != cudaSuccess) return status;
  // The state lives in the backend's workspace: a later kernel on this stream that reuses it runs
  // after this one, and growing the workspace frees it with cudaFree, which waits for the device.
  writeCutoff<<<1, 1, 0, stream>>>(buffers.state, cutoff_sq);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
