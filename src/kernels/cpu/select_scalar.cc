// Portable block kernels of the threshold selection (baseline x86-64, or any processor): the
// branch-free element loop of select.h, whatever the emit style. It only runs where AVX2 is
// missing or capped away, so it favours simplicity; building 64-bit group masks element by
// element measured slower.
#include "kernels/cpu/select.h"

namespace sccl::cpu_select {
namespace {

template <typename Bits>
size_t selectScalar(const void* x, size_t begin, size_t end, uint64_t threshold_bits, EmitStyle,
                    int64_t* idx, void* val) {
  return selectTail(static_cast<const Bits*>(x), begin, end, static_cast<Bits>(threshold_bits), idx,
                    static_cast<Bits*>(val));
}

}  // namespace

BlockSelectFn blockSelectScalar(size_t element_bytes) {
  switch (element_bytes) {
    case 2: return selectScalar<uint16_t>;
    case 4: return selectScalar<uint32_t>;
    case 8: return selectScalar<uint64_t>;
    default: break;
  }
  return nullptr;
}

}  // namespace sccl::cpu_select
