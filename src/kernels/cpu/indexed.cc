// Gather, scatter and zero-at-indices on the CPU. They only move bits, so they work on every
// dtype by element size. Large index lists run on the pool: gather and zeroAt split the list into
// contiguous parts; scatter splits the destination instead (see scatter), because repeated
// indices must keep "the last write wins".
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

// Random accesses cost a cache miss each, so parts pay off sooner than for streaming kernels.
constexpr size_t kMinPartIndices = size_t{1} << 14;

template <typename Element>
void gatherRange(const void* src, const int64_t* idx, void* out, size_t begin, size_t end) {
  const Element* from = static_cast<const Element*>(src);
  Element* to = static_cast<Element*>(out);
  for (size_t j = begin; j < end; ++j) to[j] = from[idx[j]];
}

// Destination elements are dealt to parts in blocks of this many (a few pages of any dtype), so
// that sorted index lists, the usual case, spread evenly over the parts.
constexpr int64_t kScatterOwnerBlock = 1024;

// Writes the entries whose destination belongs to `part` of `nparts`, in list order.
template <typename Element>
void scatterOwned(void* dst, const int64_t* idx, const void* vals, size_t n, size_t part,
                  size_t nparts) {
  Element* to = static_cast<Element*>(dst);
  const Element* from = static_cast<const Element*>(vals);
  if (nparts == 1) {
    for (size_t j = 0; j < n; ++j) to[idx[j]] = from[j];
    return;
  }
  for (size_t j = 0; j < n; ++j) {
    if (static_cast<size_t>(idx[j] / kScatterOwnerBlock) % nparts == part) to[idx[j]] = from[j];
  }
}

template <typename Element>
void zeroRange(void* dst, const int64_t* idx, size_t begin, size_t end) {
  Element* to = static_cast<Element*>(dst);
  for (size_t j = begin; j < end; ++j) to[idx[j]] = Element{0};
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

// Runs range_fn(begin, end) over [0, n) in contiguous parts on the pool.
template <typename RangeFn>
void forEachPart(size_t n, size_t nparts, RangeFn&& range_fn) {
  cpuThreadPool().parallelFor(nparts,
                              [&](size_t p) { range_fn(n * p / nparts, n * (p + 1) / nparts); });
}

}  // namespace

scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                    void* out) {
  return withElementType(dtype, "gather", [&]<typename Element>() {
    forEachPart(n, kernelPartCount(n, kMinPartIndices),
                [&](size_t begin, size_t end) { gatherRange<Element>(src, idx, out, begin, end); });
  });
}

// Every part reads the whole index list but writes only the destination blocks it owns: each
// element has one writer, which applies its entries in list order, so with repeated indices the
// last write wins exactly as in a sequential loop. The extra index reads are sequential and cheap
// next to the random writes they parallelise.
scclResult_t scatter(void* dst, scclDataType_t dtype, const int64_t* idx, const void* vals,
                     size_t n) {
  return withElementType(dtype, "scatter", [&]<typename Element>() {
    size_t nparts = kernelPartCount(n, kMinPartIndices);
    cpuThreadPool().parallelFor(
        nparts, [&](size_t part) { scatterOwned<Element>(dst, idx, vals, n, part, nparts); });
  });
}

scclResult_t zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n) {
  // Every write stores the same zero, so repeated indices are harmless in parallel.
  return withElementType(dtype, "zeroAt", [&]<typename Element>() {
    forEachPart(n, kernelPartCount(n, kMinPartIndices),
                [&](size_t begin, size_t end) { zeroRange<Element>(dst, idx, begin, end); });
  });
}

}  // namespace sccl::cpu
