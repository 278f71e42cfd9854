// What the CPU kernels of the calls that read nothing back (the sync_free call, S2's settled plan)
// share: the sticky fault word, which the host reads without waiting, and the NaN output of a
// call that does not complete.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/half.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl::cpu {

// A release store, the first fault kept (word 0: nothing to raise).
inline void raiseFault(uint64_t* fault, uint64_t word) {
  if (word == 0) return;
  uint64_t expected = 0;
  __atomic_compare_exchange_n(fault, &expected, word, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

inline uint64_t loadFault(const uint64_t* fault) {
  return __atomic_load_n(fault, __ATOMIC_ACQUIRE);
}

template <typename Word>
void fillWord(void* out, size_t count, Word value) {
  std::fill_n(static_cast<Word*>(out), count, value);
}

// recv = the NaN the host reduction writes for a discarded or failed call.
inline void fillNaN(void* recv, scclDataType_t dtype, size_t count) {
  const float nan = bitsToFloat(kCanonicalNaNFloat32);
  switch (dtype) {
    case scclFloat64: fillWord(recv, count, kCanonicalNaNFloat64); break;
    case scclFloat16: fillWord(recv, count, floatToFp16(nan)); break;
    case scclBfloat16: fillWord(recv, count, floatToBf16(nan)); break;
    default: fillWord(recv, count, kCanonicalNaNFloat32); break;
  }
}

}  // namespace sccl::cpu
