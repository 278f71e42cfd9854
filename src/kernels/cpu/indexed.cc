// Gather, scatter and zero-at-indices on the CPU. They only move bits, so they work on every
// dtype by element size. Large index lists run on the pool: gather splits the list into
// contiguous parts (it only reads at the indices); scatter and zeroAt split the destination
// instead, so that an element named twice in the list still has a single writer (see
// writeOwned).
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

// Random accesses cost a cache miss each, so parts pay off sooner than for streaming kernels.
constexpr size_t kMinPartIndices = size_t{1} << 14;

// Destination elements are dealt to parts in blocks of this many (a few pages of any dtype), so
// that sorted index lists, the usual case, spread evenly over the parts.
constexpr int64_t kOwnerBlockElements = 1024;

template <typename Element>
void gatherRange(const void* src, const int64_t* idx, void* out, size_t begin, size_t end) {
  const Element* from = static_cast<const Element*>(src);
  Element* to = static_cast<Element*>(out);
  for (size_t j = begin; j < end; ++j) to[j] = from[idx[j]];
}

// dst[idx[j]] = value(j) for the entries whose destination block belongs to `part` of `nparts`,
// in list order. Every part reads the whole index list but each element has exactly one writer,
// which applies its entries in order: with repeated indices the last write wins as in a
// sequential loop, and no two threads ever store to the same element. The extra index reads are
// sequential and cheap next to the random writes they parallelise.
template <typename Element, typename ValueOf>
void writeOwned(void* dst, const int64_t* idx, size_t n, size_t part, size_t nparts,
                ValueOf value) {
  Element* to = static_cast<Element*>(dst);
  if (nparts == 1) {
    for (size_t j = 0; j < n; ++j) to[idx[j]] = value(j);
    return;
  }
  for (size_t j = 0; j < n; ++j) {
    if (static_cast<size_t>(idx[j] / kOwnerBlockElements) % nparts == part) to[idx[j]] = value(j);
  }
}

// Calls fn.template operator()<Element>() with the unsigned type of the dtype's width.
template <typename Fn>
scclResult_t withElementType(scclDataType_t dtype, const char* kernel, Fn&& fn) {
  switch (dataTypeSize(dtype)) {
    case 1: fn.template operator()<uint8_t>(); return scclSuccess;
    case 2: fn.template operator()<uint16_t>(); return scclSuccess;
    case 4: fn.template operator()<uint32_t>(); return scclSuccess;
    case 8: fn.template operator()<uint64_t>(); return scclSuccess;
    default: break;
  }
  return fail(scclInvalidArgument, "%s: invalid dtype %d", kernel, static_cast<int>(dtype));
}

}  // namespace

scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                    void* out) {
  return withElementType(dtype, "gather", [&]<typename Element>() {
    size_t nparts = kernelPartCount(n, kMinPartIndices);
    cpuThreadPool().parallelFor(nparts, [&](size_t p) {
      gatherRange<Element>(src, idx, out, n * p / nparts, n * (p + 1) / nparts);
    });
  });
}

scclResult_t scatter(void* dst, scclDataType_t dtype, const int64_t* idx, const void* vals,
                     size_t n) {
  return withElementType(dtype, "scatter", [&]<typename Element>() {
    const Element* from = static_cast<const Element*>(vals);
    size_t nparts = kernelPartCount(n, kMinPartIndices);
    cpuThreadPool().parallelFor(nparts, [&](size_t part) {
      writeOwned<Element>(dst, idx, n, part, nparts, [from](size_t j) { return from[j]; });
    });
  });
}

scclResult_t zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n) {
  return withElementType(dtype, "zeroAt", [&]<typename Element>() {
    size_t nparts = kernelPartCount(n, kMinPartIndices);
    cpuThreadPool().parallelFor(nparts, [&](size_t part) {
      writeOwned<Element>(dst, idx, n, part, nparts, [](size_t) { return Element{0}; });
    });
  });
}

}  // namespace sccl::cpu
