// Memory-space query of a build without CUDA: every pointer is host memory.
#include "core/memory_space.h"

namespace sccl {
MemorySpace memorySpaceOf(const void*) {
  return MemorySpace::Host;
}
bool deviceMemoryRecognised() {
  return false;
}
}  // namespace sccl
