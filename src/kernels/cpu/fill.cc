// fillZero on the CPU: memset, split over the pool for large buffers. One thread's stores reach
// only part of the memory bandwidth (environment.md §9: ~24 GB/s on one thread, ~32 GB/s on two
// on the development machine), so zeroing a dense gradient buffer is worth splitting.
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

// A part's memset must outlast the pool round trip (tens of microseconds) by a wide margin.
constexpr size_t kMinPartBytes = size_t{1} << 20;
// Part boundaries at multiples of a cache line from the start: for an aligned buffer (the usual
// case) no line is written by two threads.
constexpr size_t kLineBytes = 64;

}  // namespace

scclResult_t fillZero(void* dst, size_t bytes) {
  const size_t nparts = kernelPartCount(bytes, kMinPartBytes);
  const size_t lines = bytes / kLineBytes;
  unsigned char* base = static_cast<unsigned char*>(dst);
  cpuThreadPool().parallelFor(nparts, [&](size_t p) {
    size_t begin = lines * p / nparts * kLineBytes;
    size_t end = p + 1 == nparts ? bytes : lines * (p + 1) / nparts * kLineBytes;
    if (end > begin) std::memset(base + begin, 0, end - begin);
  });
  return scclSuccess;
}

}  // namespace sccl::cpu
