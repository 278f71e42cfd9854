// Replaces the global operator new/delete of the test binary with counting versions over
// malloc/free (see tests/support/alloc_counter.h). The library itself is untouched: this file
// is linked into sccl_reliability_tests only. Sanitizer builds keep the sanitizer's own operators.
#include "support/alloc_counter.h"
#include "support/sanitizer_build.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<uint64_t> g_bytes{0};
std::atomic<uint64_t> g_count{0};

}  // namespace

namespace sccl_test {

uint64_t allocatedBytesTotal() {
  return g_bytes.load(std::memory_order_relaxed);
}
uint64_t allocationCount() {
  return g_count.load(std::memory_order_relaxed);
}

uint64_t heapInUseBytes() {
#ifdef SCCL_TEST_SANITIZED
  return 0;
#else
  struct mallinfo2 info = mallinfo2();
  return uint64_t(info.uordblks) + uint64_t(info.hblkhd);
#endif
}

#ifdef SCCL_TEST_SANITIZED
bool countingAvailable() {
  return false;
}
#else
// A probe rather than a constant: under valgrind its own operator new replaces ours.
bool countingAvailable() {
  static const bool counting = [] {
    uint64_t before = g_bytes.load();
    void* probe = ::operator new(4096);
    ::operator delete(probe);
    return g_bytes.load() - before >= 4096 && mallinfo2().uordblks > 0;
  }();
  return counting;
}
#endif

}  // namespace sccl_test

#ifndef SCCL_TEST_SANITIZED

namespace {

void* countedAllocate(size_t bytes, size_t alignment, bool nothrow) {
  g_bytes.fetch_add(bytes, std::memory_order_relaxed);
  g_count.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else if (posix_memalign(&p, alignment, bytes) != 0) {
    p = nullptr;
  }
  if (p == nullptr && !nothrow) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(size_t n) {
  return countedAllocate(n, 0, false);
}
void* operator new[](size_t n) {
  return countedAllocate(n, 0, false);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return countedAllocate(n, 0, true);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return countedAllocate(n, 0, true);
}
void* operator new(size_t n, std::align_val_t a) {
  return countedAllocate(n, size_t(a), false);
}
void* operator new[](size_t n, std::align_val_t a) {
  return countedAllocate(n, size_t(a), false);
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return countedAllocate(n, size_t(a), true);
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return countedAllocate(n, size_t(a), true);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

#endif
