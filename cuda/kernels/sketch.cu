// The count-sketch kernels of the S2 Reducer on the GPU, bitwise equal to the CPU's: block
// bounds, hashes, signs, the median and the decode of an element are the CPU's own functions
// (kernels/shared/sketch_element.h, kernels/shared/count_sketch.h).
//
// Encode must add each bucket's elements in index order, as the CPU does, for the table to be
// bitwise the CPU's: atomicAdd on floats would add them in a different order each run. So the
// encode (1) lists the non-zero elements of marked blocks in index order (ordered_compaction.cuh:
// one read of acc), pads the list with -1 up to the caller's bound (the S2 call passes the
// elements of the rank's marked blocks, which it knows from its plan) or, without a bound, reads
// their number back (8 bytes, one synchronisation), then for each row (2) keys every listed element
// with its bucket, (3) stable-radix-sorts the (bucket, index) pairs over the bucket's bits only,
// which keeps the indices of a bucket ascending, and (4) lets one thread per bucket run add its
// elements in that order to the bucket's existing value. The first version keyed and sorted all
// `count` elements per row (unmarked ones past every bucket): 19.8 ms of a 20.8 ms S2 call at 26M
// float32, d = 0.001, on an H100; the list is about k long. Temporary storage: 28 bytes per element
// plus the compaction's mask (sized for the worst case, every element listed). Computed values that
// are NaN are canonical (kernels/shared/canonical_nan.h), as on the CPU.
#include <cub/device/device_radix_sort.cuh>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "cuda/kernels/ordered_compaction.cuh"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

template <typename T>
__global__ void nonzeroKernel(const T* x, size_t count, size_t block, uint8_t* bitmap) {
  const size_t blocks = sketchBlockCount(count, block);
  for (size_t b = globalThread(); b < blocks; b += gridThreads()) {
    const size_t end = sketchBlockEnd(b, block, count);
    uint8_t any = 0;
    for (size_t i = b * block; i < end && any == 0; ++i) any = x[i] != T(0) ? 1 : 0;
    bitmap[b] = any;
  }
}

template <typename T>
struct MarkedNonzero {
  const T* x;
  size_t block;
  const uint8_t* bitmap;
  __device__ bool operator()(size_t i) const {
    return sketchBlockMarked(bitmap, i / block) && x[i] != T(0);
  }
};

// The bucket of a padding entry (index -1) of the bounded encode: all ones in every bit the sort
// looks at, past every real bucket (< width), and skipped when the runs are added.
constexpr uint32_t kPaddingBucket = 0xffffffffu;

__global__ void bucketKeys(const int64_t* listed, size_t n, uint64_t key, uint64_t width,
                           uint32_t* buckets) {
  for (size_t p = globalThread(); p < n; p += gridThreads()) {
    buckets[p] = listed[p] < 0
                     ? kPaddingBucket
                     : uint32_t(sketchBucket(sketchHash(key, uint64_t(listed[p])), width));
  }
}

template <typename T>
__global__ void addBucketRuns(const T* x, size_t count, uint64_t key, uint64_t width,
                              const uint32_t* buckets, const int64_t* indices, T* row) {
  for (size_t p = globalThread(); p < count; p += gridThreads()) {
    const uint32_t bucket = buckets[p];
    if (bucket == kPaddingBucket || (p > 0 && buckets[p - 1] == bucket)) continue;
    T sum = row[bucket];
    for (size_t q = p; q < count && buckets[q] == bucket; ++q) {
      const size_t i = size_t(indices[q]);
      const T v = x[i];
      sum = canonicalizeNaN(sketchNegative(sketchHash(key, i)) ? sum - v : sum + v);
    }
    row[bucket] = sum;
  }
}

template <typename T>
cudaError_t encodeTyped(void* temp, size_t* temp_bytes, const T* x, size_t count, size_t block,
                        uint32_t rows, uint64_t width, const RowKeys& keys, const uint8_t* bitmap,
                        T* table, size_t listed_bound, bool bounded, cudaStream_t stream) {
  using compaction::alignUp;
  const size_t key_bytes = alignUp(count * sizeof(uint32_t));
  const size_t index_bytes = alignUp(count * sizeof(int64_t));
  // Buckets are < width < 2^32: the sort looks at the bits a bucket can have, and one more for
  // the padding of a bounded encode (kPaddingBucket then sorts after every real bucket; a stable
  // sort keeps the real entries of a bucket in index order either way).
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t{1} << end_bit) < width) ++end_bit;
  if (bounded && end_bit < 32) ++end_bit;
  size_t cub_bytes = 0, compact_bytes = 0;
  cudaError_t status = cub::DeviceRadixSort::SortPairs(
      nullptr, cub_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
      static_cast<int64_t>(count), 0, end_bit, stream);
  if (status == cudaSuccess) status = compaction::compactTempBytes(count, &compact_bytes);
  if (status != cudaSuccess) return status;
  cub_bytes = alignUp(cub_bytes);
  if (temp == nullptr) {
    *temp_bytes = 2 * key_bytes + 2 * index_bytes + cub_bytes + compact_bytes + 256;
    return cudaSuccess;
  }
  char* base = static_cast<char*>(temp);
  auto* buckets = reinterpret_cast<uint32_t*>(base);
  auto* sorted_buckets = reinterpret_cast<uint32_t*>(base + key_bytes);
  auto* listed = reinterpret_cast<int64_t*>(base + 2 * key_bytes);
  auto* sorted_indices = reinterpret_cast<int64_t*>(base + 2 * key_bytes + index_bytes);
  void* cub_temp = base + 2 * (key_bytes + index_bytes);
  void* compact_temp = base + 2 * (key_bytes + index_bytes) + cub_bytes;
  auto* listed_count =
      reinterpret_cast<uint64_t*>(base + 2 * (key_bytes + index_bytes) + cub_bytes + compact_bytes);
  status = compaction::compact(compact_temp, MarkedNonzero<T>{x, block, bitmap}, count, 0, listed,
                               count, listed_count, stream);
  if (status != cudaSuccess) return status;
  uint64_t n = 0;
  if (bounded) {
    // listed[listed_count, listed_bound) = -1: the sort runs over the bound, nothing waits.
    n = listed_bound;
    if (n == 0) return cudaSuccess;
    status = padIndicesAfterCount(listed, listed_count, n, stream);
  } else {
    status = cudaMemcpyAsync(&n, listed_count, sizeof(n), cudaMemcpyDeviceToHost, stream);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
  }
  if (status != cudaSuccess || n == 0) return status;
  size_t sort_bytes = 0;
  status = cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, buckets, sorted_buckets, listed,
                                           sorted_indices, static_cast<int64_t>(n), 0, end_bit,
                                           stream);
  if (status != cudaSuccess) return status;
  if (sort_bytes > cub_bytes) return cudaErrorInvalidValue;  // n <= count: never
  const unsigned grid = gridFor(n);
  for (uint32_t j = 0; j < rows; ++j) {
    bucketKeys<<<grid, kThreads, 0, stream>>>(listed, n, keys.key[j], width, buckets);
    status = cub::DeviceRadixSort::SortPairs(cub_temp, sort_bytes, buckets, sorted_buckets, listed,
                                             sorted_indices, static_cast<int64_t>(n), 0, end_bit,
                                             stream);
    if (status != cudaSuccess) return status;
    addBucketRuns<<<grid, kThreads, 0, stream>>>(x, n, keys.key[j], width, sorted_buckets,
                                                 sorted_indices, table + size_t(j) * width);
  }
  return cudaGetLastError();
}

template <typename T>
__global__ void decodeKernel(const T* table, size_t count, size_t block, uint32_t rows,
                             uint64_t width, RowKeys keys, const uint8_t* bitmap, uint32_t divisor,
                             void* out, scclDataType_t out_dtype) {
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    T estimate = T(0);
    if (sketchBlockMarked(bitmap, i / block))
      estimate = sketchDecodeElement(table, rows, width, keys.key, i, divisor);
    if constexpr (sizeof(T) == 8) {
      static_cast<double*>(out)[i] = estimate;
    } else {
      storeFloat(out, out_dtype, i, estimate);
    }
  }
}

template <typename T>
__global__ void updateKernel(T* x, size_t count, size_t block, const uint8_t* bitmap,
                             const T* sub) {
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    if (!sketchBlockMarked(bitmap, i / block)) continue;
    x[i] = sub == nullptr ? T(0) : canonicalizeNaN(x[i] - sub[i]);
  }
}

}  // namespace

cudaError_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                              uint8_t* bitmap, cudaStream_t stream) {
  const size_t blocks = sketchBlockCount(count, block);
  if (blocks == 0) return cudaSuccess;
  if (dtype == scclFloat64) {
    nonzeroKernel<<<gridFor(blocks), kThreads, 0, stream>>>(static_cast<const double*>(x), count,
                                                            block, bitmap);
  } else {
    nonzeroKernel<<<gridFor(blocks), kThreads, 0, stream>>>(static_cast<const float*>(x), count,
                                                            block, bitmap);
  }
  return cudaGetLastError();
}

cudaError_t sketchEncode(void* temp, size_t* temp_bytes, const void* x, scclDataType_t dtype,
                         size_t count, size_t block, uint32_t rows, uint64_t width,
                         const RowKeys& keys, const uint8_t* bitmap, void* table,
                         size_t listed_bound, bool bounded, cudaStream_t stream) {
  if (dtype == scclFloat64) {
    return encodeTyped(temp, temp_bytes, static_cast<const double*>(x), count, block, rows, width,
                       keys, bitmap, static_cast<double*>(table), listed_bound, bounded, stream);
  }
  return encodeTyped(temp, temp_bytes, static_cast<const float*>(x), count, block, rows, width,
                     keys, bitmap, static_cast<float*>(table), listed_bound, bounded, stream);
}

cudaError_t sketchDecode(const void* table, scclDataType_t dtype, size_t count, size_t block,
                         uint32_t rows, uint64_t width, const RowKeys& keys, const uint8_t* bitmap,
                         uint32_t divisor, void* out, scclDataType_t out_dtype,
                         cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (dtype == scclFloat64) {
    decodeKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<const double*>(table), count,
                                                          block, rows, width, keys, bitmap, divisor,
                                                          out, out_dtype);
  } else {
    decodeKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<const float*>(table), count,
                                                          block, rows, width, keys, bitmap, divisor,
                                                          out, out_dtype);
  }
  return cudaGetLastError();
}

cudaError_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                               const uint8_t* bitmap, const void* sub, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (dtype == scclFloat64) {
    updateKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<double*>(x), count, block,
                                                          bitmap, static_cast<const double*>(sub));
  } else {
    updateKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<float*>(x), count, block,
                                                          bitmap, static_cast<const float*>(sub));
  }
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
