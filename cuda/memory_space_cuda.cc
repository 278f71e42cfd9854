// Memory-space query of a build with the CUDA runtime. Without a driver or device (as on the CI
// machines) cudaPointerGetAttributes fails; such pointers are host memory, and the sticky error
// is cleared so it does not leak into the caller's own CUDA error checks.
#include <cuda_runtime_api.h>

#include "core/memory_space.h"

namespace sccl {

MemorySpace memorySpaceOf(const void* ptr) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return MemorySpace::Host;
  }
  return (attributes.type == cudaMemoryTypeDevice) ? MemorySpace::Device : MemorySpace::Host;
}

bool deviceMemoryRecognised() {
  return true;
}

}  // namespace sccl
