// The error a sticky asynchronous fault word stands for (kernels/shared/sync_free_async_fault.h),
// shared by the calls that read nothing back: the sync_free call (resident_sync_free.cc) and S2
// on device buffers (sketch_call.cc).
#pragma once

#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// A non-zero fault word's code, with its text set for scclGetLastError (`call`: the reduction's
// name in the text).
scclResult_t asyncFaultError(uint64_t word, const char* call);

// The word as the host reads it without waiting (an acquire load of memory the kernels write).
inline uint64_t loadAsyncFault(const uint64_t* word) {
  return word == nullptr ? 0 : __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

}  // namespace sccl
