// Argument checks shared by the entry points that take buffers. Each fails with
// scclInvalidArgument (or scclInvalidUsage for what this build cannot do) before anything is
// touched, so a rejected call has no side effect.
#pragma once

#include "core/dtype.h"
#include "core/error.h"
#include "core/memory_space.h"

namespace sccl {

inline scclResult_t requireDataType(int dtype) {
  SCCL_REQUIRE_ARG(isValidDataType(dtype), "unknown data type %d", dtype);
  return scclSuccess;
}

// count elements of dtype: checks the byte size fits in size_t and returns it.
inline scclResult_t requireByteSize(size_t count, scclDataType_t dtype, size_t* bytes) {
  SCCL_CHECK(requireDataType(dtype));
  SCCL_REQUIRE_ARG(byteSize(count, dtype, bytes),
                   "count %zu of %s overflows the address space", count, dataTypeName(dtype));
  return scclSuccess;
}

// A buffer the host kernels and transports can use: non-null unless empty, host memory, and no
// stream (streams order device work; host calls complete before returning).
inline scclResult_t requireHostBuffer(const void* buffer, size_t bytes, const char* what,
                                      void* stream) {
  if (bytes == 0) return scclSuccess;
  SCCL_REQUIRE_ARG(buffer != nullptr, "%s is NULL", what);
  if (memorySpaceOf(buffer) == MemorySpace::Device) {
    return fail(scclInvalidUsage,
                "%s is GPU memory, but this build's kernels and transports work on host memory",
                what);
  }
  SCCL_REQUIRE_ARG(stream == nullptr, "stream must be NULL for host buffers (%s)", what);
  return scclSuccess;
}

}  // namespace sccl
