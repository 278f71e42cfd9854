// Heap use seen by the unit-test binary, for tests that bound what a call allocates:
//  - allocatedBytesTotal(): every byte ever requested through operator new (all forms), counted
//    by the replacement in tests/reliability/alloc_counter.cc (linked into sccl_reliability_tests
//    only, not into the library);
//  - heapInUseBytes(): malloc's bytes in use (mallinfo2, all arenas and mmapped chunks), which
//    also sees std::aligned_alloc and malloc calls that bypass operator new.
// Under AddressSanitizer, ThreadSanitizer or valgrind, the tool owns operator new and malloc, so
// countingAvailable() is false and tests skip these bounds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sccl_test {

bool countingAvailable();
uint64_t allocatedBytesTotal();
uint64_t allocationCount();
uint64_t heapInUseBytes();

}  // namespace sccl_test
