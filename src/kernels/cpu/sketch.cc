// The count-sketch kernels of the S2 Reducer on the CPU: block norms, non-zero block bitmap,
// encode (scatter-add into the rows x width table), decode (gather + median over rows) and the
// residual update of marked blocks. Hashes and signs: kernels/shared/count_sketch.h.
//
// Every computed value that is NaN (a bucket sum, a block norm, a decoded estimate, an updated
// residual) is written as the canonical NaN (kernels/shared/canonical_nan.h), as the CUDA kernels
// write it. Parallel splits never change a result: block norms, decode and the update split the
// blocks into contiguous parts (each element is written by one part, each block norm summed by one
// part in index order); encode gives each sketch row to one part, which adds its elements in
// index order, so every bucket receives its additions in the same order whatever the split.
#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype_checks.h"
#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/sketch_element.h"

namespace sccl::cpu {
namespace {

constexpr size_t kMinPartElements = size_t{1} << 15;
constexpr uint32_t kMaxRows = kMaxSketchRows;

// Runs fn(first_block, end_block) over contiguous parts of the blocks.
template <typename Fn>
void forBlockParts(size_t count, size_t block, Fn&& fn) {
  const size_t blocks = sketchBlockCount(count, block);
  if (blocks == 0) return;
  const size_t nparts = std::min(blocks, kernelPartCount(count, kMinPartElements));
  cpuThreadPool().parallelFor(
      nparts, [&](size_t p) { fn(blocks * p / nparts, blocks * (p + 1) / nparts); });
}

bool marked(const uint8_t* bitmap, size_t b) {
  return sketchBlockMarked(bitmap, b);
}

// Each block's sum of squares in double, in index order (the CUDA kernel sums in the same order,
// so the norms are bitwise equal). One sum is a chain of dependent additions, bound by their
// latency: four whole blocks go side by side, four independent chains, each still in its own
// block's order.
template <typename T>
void squaredNorms(const T* x, size_t count, size_t block, double* sq) {
  constexpr size_t kChains = 4;
  forBlockParts(count, block, [&](size_t first, size_t last) {
    size_t b = first;
    for (; b + kChains <= last && (b + kChains) * block <= count; b += kChains) {
      double sum[kChains] = {};
      const T* at = x + b * block;
      for (size_t i = 0; i < block; ++i) {
        for (size_t c = 0; c < kChains; ++c) {
          const double v = double(at[c * block + i]);
          sum[c] += v * v;
        }
      }
      for (size_t c = 0; c < kChains; ++c) sq[b + c] = canonicalizeNaN(sum[c]);
    }
    for (; b < last; ++b) {
      const size_t end = sketchBlockEnd(b, block, count);
      double sum = 0;
      for (size_t i = b * block; i < end; ++i) sum += double(x[i]) * double(x[i]);
      sq[b] = canonicalizeNaN(sum);
    }
  });
}

template <typename T>
void nonzeroBlocks(const T* x, size_t count, size_t block, uint8_t* bitmap) {
  forBlockParts(count, block, [&](size_t first, size_t last) {
    for (size_t b = first; b < last; ++b) {
      const size_t end = sketchBlockEnd(b, block, count);
      // A branch-free count (vectorised) beats an early exit on sparse data, where most blocks
      // are all zero and must be read to the end anyway.
      size_t nonzero = 0;
      for (size_t i = b * block; i < end; ++i) nonzero += x[i] != T(0) ? 1 : 0;
      bitmap[b] = nonzero != 0 ? 1 : 0;
    }
  });
}

template <typename T>
void encodeRow(const T* x, const SketchShape& shape, const uint8_t* bitmap, T* row, uint64_t key) {
  const size_t blocks = shape.blocks();
  for (size_t b = 0; b < blocks; ++b) {
    if (!marked(bitmap, b)) continue;
    const size_t end = sketchBlockEnd(b, shape.block, shape.count);
    for (size_t i = b * shape.block; i < end; ++i) {
      const T v = x[i];
      if (v == T(0)) continue;
      const uint64_t h = sketchHash(key, i);
      T& bucket = row[sketchBucket(h, shape.width)];
      bucket = canonicalizeNaN(sketchNegative(h) ? bucket - v : bucket + v);
    }
  }
}

// Elements [begin, end) decoded as sketchDecodeElement decodes each (the same functions,
// kernels/shared/sketch_element.h, so the result is the CUDA decode's bit for bit), a batch at a
// time in three sweeps: every row's table position, then every table read, then the medians. The
// reads are independent and random over the table: issued together, the core overlaps their
// misses, where one element at a time the medians' data-dependent branches kept cutting them off.
template <typename T, typename Store>
void decodeSpan(const T* table, const SketchShape& shape, size_t begin, size_t end,
                uint32_t divisor, Store& store) {
  constexpr size_t kBatchEntries = 256;
  static_assert(kBatchEntries >= 4 * kMaxRows, "a batch holds at least 4 elements");
  const uint32_t rows = shape.rows;
  const size_t batch = kBatchEntries / rows;
  size_t at[kBatchEntries];
  bool negative[kBatchEntries];
  T values[kBatchEntries];
  for (size_t first = begin; first < end; first += batch) {
    const size_t n = std::min(batch, end - first);
    for (size_t e = 0; e < n; ++e) {
      for (uint32_t j = 0; j < rows; ++j) {
        at[e * rows + j] =
            sketchTableEntry(shape.row_keys, j, shape.width, first + e, &negative[e * rows + j]);
      }
    }
    for (size_t q = 0; q < n * rows; ++q) {
      const T value = table[at[q]];
      values[q] = negative[q] ? -value : value;
    }
    for (size_t e = 0; e < n; ++e)
      store(first + e, sketchEstimate(values + e * rows, rows, divisor));
  }
}

template <typename T, typename Store>
void decodeAll(const T* table, const SketchShape& shape, const uint8_t* bitmap, uint32_t divisor,
               Store store) {
  forBlockParts(shape.count, shape.block, [&](size_t first, size_t last) {
    for (size_t b = first; b < last; ++b) {
      const size_t end = sketchBlockEnd(b, shape.block, shape.count);
      if (!marked(bitmap, b)) {
        for (size_t i = b * shape.block; i < end; ++i) store(i, T(0));
        continue;
      }
      decodeSpan(table, shape, b * shape.block, end, divisor, store);
    }
  });
}

template <typename T>
void updateBlocks(T* x, size_t count, size_t block, const uint8_t* bitmap, const T* sub) {
  forBlockParts(count, block, [&](size_t first, size_t last) {
    for (size_t b = first; b < last; ++b) {
      if (!marked(bitmap, b)) continue;
      const size_t end = sketchBlockEnd(b, block, count);
      for (size_t i = b * block; i < end; ++i) {
        x[i] = sub == nullptr ? T(0) : canonicalizeNaN(x[i] - sub[i]);
      }
    }
  });
}

}  // namespace

scclResult_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                               double* sq) {
  SCCL_CHECK(requireAccType(dtype, "blockSquaredNorms"));
  if (dtype == scclFloat64) {
    squaredNorms(static_cast<const double*>(x), count, block, sq);
  } else {
    squaredNorms(static_cast<const float*>(x), count, block, sq);
  }
  return scclSuccess;
}

scclResult_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                               uint8_t* bitmap) {
  SCCL_CHECK(requireAccType(dtype, "markNonzeroBlocks"));
  if (dtype == scclFloat64) {
    nonzeroBlocks(static_cast<const double*>(x), count, block, bitmap);
  } else {
    nonzeroBlocks(static_cast<const float*>(x), count, block, bitmap);
  }
  return scclSuccess;
}

scclResult_t sketchEncode(const void* x, scclDataType_t dtype, const SketchShape& shape,
                          const uint8_t* bitmap, void* table) {
  SCCL_CHECK(requireAccType(dtype, "sketchEncode"));
  if (shape.rows == 0 || shape.rows > kMaxRows) {
    return fail(scclInvalidArgument, "sketchEncode: %u rows (1 to %u)", shape.rows, kMaxRows);
  }
  // One part per row: a row's buckets are only touched by its part, in index order.
  cpuThreadPool().parallelFor(shape.rows, [&](size_t j) {
    const uint64_t key = shape.row_keys[j];
    if (dtype == scclFloat64) {
      encodeRow(static_cast<const double*>(x), shape, bitmap,
                static_cast<double*>(table) + j * shape.width, key);
    } else {
      encodeRow(static_cast<const float*>(x), shape, bitmap,
                static_cast<float*>(table) + j * shape.width, key);
    }
  });
  return scclSuccess;
}

scclResult_t sketchDecode(const void* table, scclDataType_t dtype, const SketchShape& shape,
                          const uint8_t* bitmap, uint32_t divisor, void* out,
                          scclDataType_t out_dtype) {
  SCCL_CHECK(requireAccType(dtype, "sketchDecode"));
  if (shape.rows == 0 || shape.rows > kMaxRows || divisor == 0) {
    return fail(scclInvalidArgument, "sketchDecode: %u rows (1 to %u), divisor %u", shape.rows,
                kMaxRows, divisor);
  }
  if (dtype == scclFloat64) {
    if (out_dtype != scclFloat64) {
      return fail(scclInvalidArgument, "sketchDecode: a float64 table decodes to float64, not %s",
                  dataTypeName(out_dtype));
    }
    double* to = static_cast<double*>(out);
    decodeAll(static_cast<const double*>(table), shape, bitmap, divisor,
              [to](size_t i, double v) { to[i] = v; });
    return scclSuccess;
  }
  const float* from = static_cast<const float*>(table);
  switch (out_dtype) {
    case scclFloat32: {
      float* to = static_cast<float*>(out);
      decodeAll(from, shape, bitmap, divisor, [to](size_t i, float v) { to[i] = v; });
      return scclSuccess;
    }
    case scclFloat16: {
      uint16_t* to = static_cast<uint16_t*>(out);
      decodeAll(from, shape, bitmap, divisor, [to](size_t i, float v) { to[i] = floatToFp16(v); });
      return scclSuccess;
    }
    case scclBfloat16: {
      uint16_t* to = static_cast<uint16_t*>(out);
      decodeAll(from, shape, bitmap, divisor, [to](size_t i, float v) { to[i] = floatToBf16(v); });
      return scclSuccess;
    }
    default: break;
  }
  return fail(scclInvalidArgument, "sketchDecode: a float32 table cannot decode to %s",
              dataTypeName(out_dtype));
}

scclResult_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                                const uint8_t* bitmap, const void* sub) {
  SCCL_CHECK(requireAccType(dtype, "updateMarkedBlocks"));
  if (dtype == scclFloat64) {
    updateBlocks(static_cast<double*>(x), count, block, bitmap, static_cast<const double*>(sub));
  } else {
    updateBlocks(static_cast<float*>(x), count, block, bitmap, static_cast<const float*>(sub));
  }
  return scclSuccess;
}

}  // namespace sccl::cpu
