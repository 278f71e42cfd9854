// Gather, scatter, zero-at-indices and the converting scatter on the CPU. The first three only
// move bits, so they work on every dtype by element size. Large index lists run on the pool:
// gather splits the list into contiguous parts (it only reads at the indices); the scatters and
// zeroAt split the destination instead, so that an element named twice in the list still has a
// single writer (see writeOwned).
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/shared/canonical_nan.h"

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

// Runs writeOwned over the pool for a destination of Element.
template <typename Element, typename ValueOf>
void scatterConverted(void* dst, const int64_t* idx, size_t n, ValueOf value) {
  size_t nparts = kernelPartCount(n, kMinPartIndices);
  cpuThreadPool().parallelFor(
      nparts, [&](size_t part) { writeOwned<Element>(dst, idx, n, part, nparts, value); });
}

// float32 values times `scale` (in float32) into a float32, float16 or bfloat16 destination. A
// unit scale skips the multiply: the result is then a copy or a plain conversion, bit for bit,
// signalling NaNs included (a multiply would quiet them). A product that is NaN is written as the
// canonical NaN (kernels/shared/canonical_nan.h), which narrows to the canonical 16-bit one.
scclResult_t scatterFloatValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                                const float* vals, size_t n, float scale) {
  const bool unit = scale == 1.0f;
  switch (dst_dtype) {
    case scclFloat32:
      if (unit) return scatter(dst, scclFloat32, idx, vals, n);
      scatterConverted<float>(dst, idx, n,
                              [=](size_t j) { return canonicalizeNaN(vals[j] * scale); });
      return scclSuccess;
    case scclFloat16:
      if (unit) {
        scatterConverted<uint16_t>(dst, idx, n, [=](size_t j) { return floatToFp16(vals[j]); });
      } else {
        scatterConverted<uint16_t>(
            dst, idx, n, [=](size_t j) { return floatToFp16(canonicalizeNaN(vals[j] * scale)); });
      }
      return scclSuccess;
    case scclBfloat16:
      if (unit) {
        scatterConverted<uint16_t>(dst, idx, n, [=](size_t j) { return floatToBf16(vals[j]); });
      } else {
        scatterConverted<uint16_t>(
            dst, idx, n, [=](size_t j) { return floatToBf16(canonicalizeNaN(vals[j] * scale)); });
      }
      return scclSuccess;
    default: break;
  }
  return fail(scclInvalidArgument, "scatterValues: float32 values into %s is not supported",
              dataTypeName(dst_dtype));
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

scclResult_t gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                           void* out) {
  // Indices are distinct, so splitting the list gives every element one writer.
  return withElementType(dtype, "gatherAndZero", [&]<typename Element>() {
    Element* from = static_cast<Element*>(src);
    Element* to = static_cast<Element*>(out);
    size_t nparts = kernelPartCount(n, kMinPartIndices);
    cpuThreadPool().parallelFor(nparts, [&](size_t p) {
      for (size_t j = n * p / nparts; j < n * (p + 1) / nparts; ++j) {
        to[j] = from[idx[j]];
        from[idx[j]] = Element{0};
      }
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

scclResult_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                           const void* vals, scclDataType_t val_dtype, size_t n, double scale) {
  if (val_dtype == scclFloat32) {
    return scatterFloatValues(dst, dst_dtype, idx, static_cast<const float*>(vals), n,
                              static_cast<float>(scale));
  }
  if (val_dtype != scclFloat64 || dst_dtype != scclFloat64) {
    return fail(scclInvalidArgument, "scatterValues: %s values into %s is not supported",
                dataTypeName(val_dtype), dataTypeName(dst_dtype));
  }
  if (scale == 1.0) return scatter(dst, scclFloat64, idx, vals, n);
  const double* from = static_cast<const double*>(vals);
  scatterConverted<double>(dst, idx, n, [=](size_t j) { return canonicalizeNaN(from[j] * scale); });
  return scclSuccess;
}

}  // namespace sccl::cpu
