// Where a buffer lives. Host memory runs on the CPU kernel backend; device memory needs the CUDA
// backend. A build with CUDA asks the CUDA runtime (cudaPointerGetAttributes); a build without
// it treats every pointer as host memory.
#pragma once

namespace sccl {

enum class MemorySpace { Host, Device };

MemorySpace memorySpaceOf(const void* ptr);

// Whether this build can recognise device pointers at all (for sccl_info).
bool deviceMemoryRecognised();

}  // namespace sccl
