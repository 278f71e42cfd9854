// The entry layer of the CUDA backend: argument checks as the CPU backend's, the workspace, and
// the conversion of CUDA errors to scclResult_t. See cuda_kernels.h.
#include "cuda/cuda_kernels.h"

#include "cuda/cuda_kernels_entry.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "cuda/dispatch.h"
#include "kernels/dtype_checks.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl {
namespace {

bool isFloating(scclDataType_t dtype) {
  return dtype == scclFloat32 || dtype == scclFloat64 || dtype == scclFloat16 ||
         dtype == scclBfloat16;
}

scclResult_t requireFloating(scclDataType_t dtype, const char* kernel) {
  if (isFloating(dtype)) return scclSuccess;
  return fail(scclInvalidArgument, "%s: %s data is not supported (a floating type)", kernel,
              dataTypeName(dtype));
}

scclResult_t rowKeys(const SketchShape& shape, const char* kernel, cuda_dispatch::RowKeys* keys) {
  if (shape.rows == 0 || shape.rows > kMaxSketchRows) {
    return fail(scclInvalidArgument, "%s: %u rows (1 to %u)", kernel, shape.rows, kMaxSketchRows);
  }
  std::memset(keys, 0, sizeof(*keys));
  for (uint32_t j = 0; j < shape.rows; ++j) keys->key[j] = shape.row_keys[j];
  return scclSuccess;
}

// The pairs of an accumulator type and a data type the kernels convert between exactly (a
// float64 accumulator holds float64 data; a float32 one float32, float16 and bfloat16).
scclResult_t requireAccumulatePair(scclDataType_t acc_dtype, scclDataType_t grad_dtype) {
  SCCL_REQUIRE_ARG(accumulatorHolds(acc_dtype, grad_dtype),
                   "accumulate: %s gradients into a %s residual are not supported",
                   dataTypeName(grad_dtype), dataTypeName(acc_dtype));
  return scclSuccess;
}

}  // namespace

scclResult_t CudaKernels::copyToHost(void* host, const void* device, size_t bytes, void* stream,
                                     const char* what) const {
  uint64_t* pinned = nullptr;
  SCCL_CHECK(workspace_.hostCount(&pinned));
  SCCL_CUDA_CHECK(
      cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, asCudaStream(stream)), what);
  SCCL_CUDA_CHECK(cudaStreamSynchronize(asCudaStream(stream)), what);
  std::memcpy(host, pinned, bytes);
  return scclSuccess;
}

scclResult_t CudaKernels::accumulate(void* acc, const void* residual, scclDataType_t acc_dtype,
                                     const void* grad, scclDataType_t grad_dtype, size_t count,
                                     uint64_t* nonfinite, void* stream) const {
  SCCL_CHECK(requireAccumulatePair(acc_dtype, grad_dtype));
  SCCL_CUDA_CHECK(cuda_dispatch::accumulate(acc, residual, acc_dtype, grad, grad_dtype, count,
                                            nonfinite, asCudaStream(stream)),
                  "accumulate");
  return scclSuccess;
}

scclResult_t CudaKernels::accumulateSelect(const AccumulateSelectArgs& a, void* stream) const {
  SCCL_REQUIRE_ARG(a.begin <= a.end && a.end <= a.count,
                   "accumulateSelect: range [%zu, %zu) outside [0, %zu)", a.begin, a.end, a.count);
  // The contract of the CPU's single pass (kernels.h), checked alike so both refuse the same.
  SCCL_REQUIRE_ARG(a.bins == 0 || a.idx == nullptr ||
                       thresholdBits(a.acc_dtype, a.floor) <= a.base_bits,
                   "accumulateSelect: the candidates' floor %g lies above the histogram's base",
                   a.floor);
  // The histogram counted as the values are written (histogram.cu) when its window fits in
  // shared memory; else accumulate, then count.
  const bool fused =
      a.bins > 0 && a.begin < a.end && cuda_dispatch::histogramInSharedMemory(a.bins);
  if (fused) {
    SCCL_CHECK(requireAccumulatePair(a.acc_dtype, a.grad_dtype));
    SCCL_CUDA_CHECK(
        cuda_dispatch::accumulateHistogram(a.acc, a.residual, a.acc_dtype, a.grad, a.grad_dtype,
                                           a.count, a.nonfinite, a.begin, a.end, a.base_bits,
                                           a.shift, a.bins, a.counts, asCudaStream(stream)),
        "accumulateSelect");
  } else {
    SCCL_CHECK(accumulate(a.acc, a.residual, a.acc_dtype, a.grad, a.grad_dtype, a.count,
                          a.nonfinite, stream));
  }
  if (a.out != nullptr) SCCL_CHECK(fillZero(a.out, a.count * dataTypeSize(a.out_dtype), stream));
  if (a.bins > 0 && !fused) {
    if (a.begin < a.end) {
      SCCL_CHECK(absBitHistogram(a.acc, a.acc_dtype, a.begin, a.end, a.base_bits, a.shift, a.bins,
                                 a.counts, stream));
    } else {
      SCCL_CHECK(fillZero(a.counts, (a.bins + 1) * sizeof(uint64_t), stream));
    }
  }
  if (a.idx == nullptr) return scclSuccess;
  SCCL_REQUIRE_ARG(a.ncandidates != nullptr, "accumulateSelect: candidates need a count output");
  if (a.begin == a.end) {
    *a.ncandidates = 0;
    return scclSuccess;
  }
  return selectAbove(a.acc, a.acc_dtype, a.begin, a.end, a.floor, a.idx, a.val, a.capacity,
                     a.ncandidates, stream);
}

scclResult_t CudaKernels::gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx,
                                        size_t n, void* out, void* stream) const {
  SCCL_CHECK(gather(src, dtype, idx, n, out, stream));
  return zeroAt(src, dtype, idx, n, stream);
}

scclResult_t CudaKernels::writeDense(void* dst, scclDataType_t dst_dtype, size_t count,
                                     const int64_t* idx, const void* vals,
                                     scclDataType_t val_dtype, size_t n, double scale,
                                     void* stream) const {
  SCCL_CHECK(fillZero(dst, count * dataTypeSize(dst_dtype), stream));
  return scatterValues(dst, dst_dtype, idx, vals, val_dtype, n, scale, stream);
}

scclResult_t CudaKernels::selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                      double threshold, int64_t* idx, void* val, size_t capacity,
                                      size_t* nselected, void* stream) const {
  SCCL_CHECK(requireFloating(dtype, "selectAbove"));
  void* word = nullptr;
  SCCL_CHECK(result_.reserve(sizeof(uint64_t), &word));
  auto* count = static_cast<uint64_t*>(word);
  const uint64_t bits = thresholdBits(dtype, threshold);
  SCCL_CHECK(withTemp("selectAbove", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::selectAbove(temp, bytes, x, dataTypeSize(dtype), begin, end, bits, idx,
                                      val, capacity, count, asCudaStream(stream));
  }));
  // The count-exchanging algorithms need k on the host to size their exchange: the one
  // device-to-host transfer of their call.
  uint64_t host_count = 0;
  SCCL_CHECK(copyToHost(&host_count, count, sizeof(host_count), stream, "selectAbove count"));
  *nselected = static_cast<size_t>(host_count);
  return scclSuccess;
}

scclResult_t CudaKernels::selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin,
                                            size_t end, double threshold, size_t n, int64_t* idx,
                                            size_t padded, void* stream) const {
  SCCL_CHECK(requireFloating(dtype, "selectAbovePadded"));
  SCCL_REQUIRE_ARG(n <= padded, "selectAbovePadded: %zu entries in a slice of %zu", n, padded);
  if (n > 0) {
    void* word = nullptr;  // the count, left on the device: the caller knows it
    SCCL_CHECK(result_.reserve(sizeof(uint64_t), &word));
    const uint64_t bits = thresholdBits(dtype, threshold);
    SCCL_CHECK(withTemp("selectAbovePadded", [&](void* temp, size_t* bytes) {
      return cuda_dispatch::selectAbove(temp, bytes, x, dataTypeSize(dtype), begin, end, bits, idx,
                                        nullptr, n, static_cast<uint64_t*>(word),
                                        asCudaStream(stream));
    }));
  }
  SCCL_CUDA_CHECK(cuda_dispatch::padIndices(idx, n, padded, asCudaStream(stream)), "padIndices");
  return scclSuccess;
}

scclResult_t CudaKernels::selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                                 scclDataType_t dtype, size_t ncand,
                                                 double threshold, size_t n, int64_t* idx,
                                                 size_t padded, void* stream) const {
  SCCL_CHECK(requireFloating(dtype, "selectCandidatesPadded"));
  SCCL_REQUIRE_ARG(n <= padded && n <= ncand,
                   "selectCandidatesPadded: %zu entries of %zu candidates in a slice of %zu", n,
                   ncand, padded);
  if (n > 0) {
    void* word = nullptr;  // the count, left on the device: the caller knows it
    SCCL_CHECK(result_.reserve(sizeof(uint64_t), &word));
    const uint64_t bits = thresholdBits(dtype, threshold);
    // The qualifying candidates' positions into idx, then each position replaced by its
    // candidate's index (in place: every entry reads its own position before it writes). Had
    // fewer than n qualified (a plan that does not match the candidates), the positions past
    // them are -1 and stay -1, which the slice check refuses: nothing is read out of bounds.
    SCCL_CHECK(withTemp("selectCandidatesPadded", [&](void* temp, size_t* bytes) {
      return cuda_dispatch::selectAbove(temp, bytes, cand_val, dataTypeSize(dtype), 0, ncand, bits,
                                        idx, nullptr, n, static_cast<uint64_t*>(word),
                                        asCudaStream(stream));
    }));
    SCCL_CUDA_CHECK(cuda_dispatch::padIndicesAfterCount(idx, static_cast<const uint64_t*>(word), n,
                                                        asCudaStream(stream)),
                    "selectCandidatesPadded: padding");
    SCCL_CUDA_CHECK(cuda_dispatch::candidateIndices(cand_idx, idx, n, asCudaStream(stream)),
                    "selectCandidatesPadded: the candidates' indices");
  }
  SCCL_CUDA_CHECK(cuda_dispatch::padIndices(idx, n, padded, asCudaStream(stream)), "padIndices");
  return scclSuccess;
}

scclResult_t CudaKernels::markedElements(const uint8_t* bitmap, size_t count, size_t block,
                                         uint64_t* elements, void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::markedElements(bitmap, count, block, elements, asCudaStream(stream)),
      "markedElements");
  return scclSuccess;
}

scclResult_t CudaKernels::planSketch(const uint64_t* headers, const GatherPlanParams& params,
                                     size_t count, size_t block, const uint8_t* union_bitmap,
                                     uint64_t* plan, void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::planSketch(headers, params, count, block, union_bitmap, plan,
                                            asCudaStream(stream)),
                  "planSketch");
  return scclSuccess;
}

scclResult_t CudaKernels::selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin,
                                             size_t end, double threshold, size_t capacity,
                                             int64_t* idx, uint64_t* count, void* stream) const {
  SCCL_CHECK(requireFloating(dtype, "selectAboveCounted"));
  const uint64_t bits = thresholdBits(dtype, threshold);
  // The compaction writes at most `capacity` positions and counts every qualifying one.
  SCCL_CHECK(withTemp("selectAboveCounted", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::selectAbove(temp, bytes, x, dataTypeSize(dtype), begin,
                                      std::max(begin, end), bits, idx, nullptr, capacity, count,
                                      asCudaStream(stream));
  }));
  SCCL_CUDA_CHECK(cuda_dispatch::padIndicesAfterCount(idx, count, capacity, asCudaStream(stream)),
                  "padIndicesAfterCount");
  return scclSuccess;
}

scclResult_t CudaKernels::selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin,
                                               size_t end, const uint64_t* threshold_bits,
                                               size_t capacity, int64_t* idx, uint64_t* count,
                                               void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "selectAboveCountedAt"));
  SCCL_CHECK(withTemp("selectAboveCountedAt", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::selectAboveWord(temp, bytes, x, dataTypeSize(dtype), begin,
                                          std::max(begin, end), threshold_bits, idx, capacity,
                                          count, asCudaStream(stream));
  }));
  SCCL_CUDA_CHECK(cuda_dispatch::padIndicesAfterCount(idx, count, capacity, asCudaStream(stream)),
                  "padIndicesAfterCount");
  return scclSuccess;
}

scclResult_t CudaKernels::selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                                  scclDataType_t dtype, size_t ncand,
                                                  double threshold, size_t capacity, int64_t* idx,
                                                  uint64_t* count, void* stream) const {
  SCCL_CHECK(
      selectAboveCounted(cand_val, dtype, 0, ncand, threshold, capacity, idx, count, stream));
  // The padding (-1) stays -1; each kept position becomes its candidate's index.
  SCCL_CUDA_CHECK(cuda_dispatch::candidateIndices(cand_idx, idx, capacity, asCudaStream(stream)),
                  "selectCandidatesCounted: the candidates' indices");
  return scclSuccess;
}

scclResult_t CudaKernels::planGather(const uint64_t* records, const GatherPlanParams& params,
                                     const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                                     void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::planGather(records, params, ranges, fault, plan, asCudaStream(stream)),
      "planGather");
  return scclSuccess;
}

scclResult_t CudaKernels::assembleExclusiveIndices(const int64_t* gathered, size_t nranks,
                                                   size_t slot, size_t first_rank,
                                                   const uint64_t* plan, const uint64_t* ranges,
                                                   int64_t* global, uint32_t* fault,
                                                   void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::assembleExclusiveIndices(gathered, nranks, slot, first_rank, plan, ranges,
                                              global, fault, asCudaStream(stream)),
      "assembleExclusiveIndices");
  return scclSuccess;
}

scclResult_t CudaKernels::planEdge(const uint64_t* summed, const uint64_t* own,
                                   const GatherPlanParams& params, uint64_t* edge_words,
                                   uint64_t* own_count, void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::planEdge(summed, own, params, edge_words, own_count, asCudaStream(stream)),
      "planEdge");
  return scclSuccess;
}

scclResult_t CudaKernels::planHeaders(const uint64_t* headers, const GatherPlanParams& params,
                                      const uint64_t* ranges, const uint32_t* fault,
                                      const uint64_t* edge_words, uint64_t* plan,
                                      void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::planHeaders(headers, params, ranges, fault, edge_words, plan,
                                             asCudaStream(stream)),
                  "planHeaders");
  return scclSuccess;
}

scclResult_t CudaKernels::selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                     size_t k, int64_t* idx, uint64_t* kth_bits,
                                     void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "selectTopK"));
  SCCL_REQUIRE_ARG(k >= 1 && begin + k <= end, "selectTopK: k %zu of [%zu, %zu)", k, begin, end);
  // Words: the range's bounds, the threshold 0.0 (every entry qualifies), the call number the
  // slot header wants; then the slot, whose indices start at its word 4.
  void* memory = nullptr;
  SCCL_CHECK(topk_.reserve((4 + kSlotHeaderWords + k) * sizeof(uint64_t), &memory));
  auto* words = static_cast<uint64_t*>(memory);
  auto* slot = reinterpret_cast<int64_t*>(words + 4);
  SCCL_CUDA_CHECK(cuda_dispatch::setWords(words, begin, end, 0, 0, asCudaStream(stream)),
                  "selectTopK");
  const cuda_dispatch::SlotHeader header{0, words + 3};
  SCCL_CHECK(withTemp("selectTopK", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::syncFreeSelect(temp, bytes, x, dtype, words, end - begin,
                                         reinterpret_cast<const double*>(words + 2), k, k, nullptr,
                                         header, slot, asCudaStream(stream));
  }));
  SCCL_CUDA_CHECK(cuda_dispatch::topKEmit(x, dataTypeSize(dtype), slot + kSlotHeaderWords, k, idx,
                                          kth_bits, asCudaStream(stream)),
                  "selectTopK");
  return scclSuccess;
}

scclResult_t CudaKernels::selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                               scclDataType_t dtype, size_t ncand, size_t k,
                                               int64_t* idx, uint64_t* kth_bits,
                                               void* stream) const {
  SCCL_REQUIRE_ARG(k >= 1 && k <= ncand, "selectTopKCandidates: k %zu of %zu candidates", k, ncand);
  SCCL_CHECK(selectTopK(cand_val, dtype, 0, ncand, k, idx, kth_bits, stream));
  SCCL_CUDA_CHECK(cuda_dispatch::candidateIndices(cand_idx, idx, k, asCudaStream(stream)),
                  "selectTopKCandidates: the candidates' indices");
  return scclSuccess;
}

scclResult_t CudaKernels::writeDenseUnlessFault(void* dst, scclDataType_t dst_dtype, size_t count,
                                                const int64_t* idx, const void* vals,
                                                scclDataType_t val_dtype, size_t n, double scale,
                                                const uint32_t* fault, void* stream) const {
  SCCL_REQUIRE_ARG(accumulatorHolds(val_dtype, dst_dtype),
                   "writeDenseUnlessFault: %s values into %s is not supported",
                   dataTypeName(val_dtype), dataTypeName(dst_dtype));
  SCCL_CUDA_CHECK(cuda_dispatch::zeroUnlessFault(dst, count * dataTypeSize(dst_dtype), fault,
                                                 asCudaStream(stream)),
                  "writeDenseUnlessFault");
  SCCL_CUDA_CHECK(cuda_dispatch::scatterValues(dst, dst_dtype, idx, vals, val_dtype, n, scale,
                                               asCudaStream(stream), fault),
                  "writeDenseUnlessFault");
  return scclSuccess;
}

scclResult_t CudaKernels::copyOnFault(void* dst, const void* src, size_t bytes,
                                      const uint32_t* fault, uint32_t* published,
                                      void* stream) const {
  SCCL_REQUIRE_ARG(bytes % 4 == 0, "copyOnFault: %zu bytes", bytes);
  SCCL_CUDA_CHECK(
      cuda_dispatch::copyOnFault(dst, src, bytes, fault, published, asCudaStream(stream)),
      "copyOnFault");
  return scclSuccess;
}

scclResult_t CudaKernels::gather(const void* src, scclDataType_t dtype, const int64_t* idx,
                                 size_t n, void* out, void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::gather(src, dataTypeSize(dtype), idx, n, out, asCudaStream(stream)), "gather");
  return scclSuccess;
}

scclResult_t CudaKernels::scatter(void* dst, scclDataType_t dtype, const int64_t* idx,
                                  const void* vals, size_t n, void* stream) const {
  SCCL_CUDA_CHECK(
      cuda_dispatch::scatter(dst, dataTypeSize(dtype), idx, vals, n, asCudaStream(stream)),
      "scatter");
  return scclSuccess;
}

scclResult_t CudaKernels::zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n,
                                 void* stream) const {
  SCCL_CUDA_CHECK(cuda_dispatch::zeroAt(dst, dataTypeSize(dtype), idx, n, asCudaStream(stream)),
                  "zeroAt");
  return scclSuccess;
}

scclResult_t CudaKernels::scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                                        const void* vals, scclDataType_t val_dtype, size_t n,
                                        double scale, void* stream) const {
  SCCL_REQUIRE_ARG(accumulatorHolds(val_dtype, dst_dtype),
                   "scatterValues: %s values into %s is not supported",
                   dataTypeName(val_dtype), dataTypeName(dst_dtype));
  SCCL_CUDA_CHECK(cuda_dispatch::scatterValues(dst, dst_dtype, idx, vals, val_dtype, n, scale,
                                               asCudaStream(stream)),
                  "scatterValues");
  return scclSuccess;
}

scclResult_t CudaKernels::fillZero(void* dst, size_t bytes, void* stream) const {
  if (bytes == 0) return scclSuccess;
  SCCL_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, asCudaStream(stream)), "fillZero");
  return scclSuccess;
}

scclResult_t CudaKernels::divideByRanks(void* x, scclDataType_t dtype, size_t count, int nranks,
                                        void* stream) const {
  SCCL_CHECK(requireFloating(dtype, "divideByRanks"));
  SCCL_REQUIRE_ARG(nranks >= 1, "divideByRanks: %d ranks", nranks);
  SCCL_CUDA_CHECK(cuda_dispatch::divideByRanks(x, dtype, count, nranks, asCudaStream(stream)),
                  "divideByRanks");
  return scclSuccess;
}

scclResult_t CudaKernels::kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin,
                                        size_t end, uint64_t k, double* value, void* stream) const {
  SCCL_CHECK(requireFloating(dtype, "kthLargestAbs"));
  SCCL_REQUIRE_ARG(end > begin && k >= 1 && k <= end - begin,
                   "kthLargestAbs: k = %llu outside [1, %zu]", static_cast<unsigned long long>(k),
                   end > begin ? end - begin : size_t{0});
  void* word = nullptr;
  SCCL_CHECK(result_.reserve(sizeof(uint64_t), &word));
  auto* kth = static_cast<uint64_t*>(word);
  const size_t element = dataTypeSize(dtype);
  SCCL_CHECK(withTemp("kthLargestAbs", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::kthLargestAbsBits(temp, bytes, x, element, begin, end, k, kth,
                                            asCudaStream(stream));
  }));
  uint64_t bits = 0;
  SCCL_CHECK(copyToHost(&bits, kth, sizeof(bits), stream, "kthLargestAbs"));
  switch (dtype) {
    case scclFloat64: std::memcpy(value, &bits, sizeof(double)); break;
    case scclFloat32: *value = bitsToFloat(uint32_t(bits)); break;
    case scclFloat16: *value = fp16ToFloat(uint16_t(bits)); break;
    default: *value = bf16ToFloat(uint16_t(bits)); break;
  }
  return scclSuccess;
}

scclResult_t CudaKernels::absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                     double floor, bool want_log, AbsMoments* out,
                                     void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "absMoments"));
  void* word = nullptr;
  SCCL_CHECK(result_.reserve(sizeof(cuda_dispatch::DeviceMoments), &word));
  auto* moments = static_cast<cuda_dispatch::DeviceMoments*>(word);
  SCCL_CHECK(withTemp("absMoments", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::absMoments(temp, bytes, x, dtype, begin, end, floor, want_log, moments,
                                     asCudaStream(stream));
  }));
  cuda_dispatch::DeviceMoments m{};
  SCCL_CUDA_CHECK(
      cudaMemcpyAsync(&m, moments, sizeof(m), cudaMemcpyDeviceToHost, asCudaStream(stream)),
      "absMoments");
  SCCL_CUDA_CHECK(cudaStreamSynchronize(asCudaStream(stream)), "absMoments");
  *out = AbsMoments{};
  out->count = m.count;
  out->nan_count = m.nan_count;
  out->zero_count = m.zero_count;
  out->sum_abs = m.sum_abs;
  out->sum_sq = m.sum_sq;
  out->sum_log = want_log ? m.sum_log : 0;
  out->max_abs = m.max_abs;
  out->min_abs = m.min_abs;
  return scclSuccess;
}

scclResult_t CudaKernels::absBitHistogram(const void* x, scclDataType_t dtype, size_t begin,
                                          size_t end, uint64_t base_bits, unsigned shift,
                                          size_t bins, uint64_t* counts, void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "absBitHistogram"));
  SCCL_CUDA_CHECK(cuda_dispatch::absBitHistogram(x, dataTypeSize(dtype), begin, end, base_bits,
                                                 shift, bins, counts, asCudaStream(stream)),
                  "absBitHistogram");
  return scclSuccess;
}

scclResult_t CudaKernels::countCheckWindow(const void* x, scclDataType_t dtype, size_t begin,
                                           size_t end, const CountCheckWindow& w, uint64_t* counts,
                                           uint64_t* check, uint64_t* threshold_bits,
                                           void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "countCheckWindow"));
  SCCL_CUDA_CHECK(cuda_dispatch::countCheckWindow(x, dataTypeSize(dtype), begin, end, w, counts,
                                                  check, threshold_bits, asCudaStream(stream)),
                  "countCheckWindow");
  return scclSuccess;
}

scclResult_t CudaKernels::blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count,
                                            size_t block, double* sq, void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "blockSquaredNorms"));
  SCCL_CUDA_CHECK(
      cuda_dispatch::blockSquaredNorms(x, dtype, count, block, sq, asCudaStream(stream)),
      "blockSquaredNorms");
  return scclSuccess;
}

scclResult_t CudaKernels::markTopBlocks(const double* sq, size_t blocks, size_t max_blocks,
                                        uint8_t* marks, double* cutoff_sq, void* stream) const {
  SCCL_REQUIRE_ARG(cutoff_sq != nullptr && (blocks == 0 || (sq != nullptr && marks != nullptr)),
                   "markTopBlocks: null array");
  return withTemp("markTopBlocks", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::markTopBlocks(temp, bytes, sq, blocks, max_blocks, marks, cutoff_sq,
                                        asCudaStream(stream));
  });
}

scclResult_t CudaKernels::markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count,
                                            size_t block, uint8_t* bitmap, void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "markNonzeroBlocks"));
  SCCL_CUDA_CHECK(
      cuda_dispatch::markNonzeroBlocks(x, dtype, count, block, bitmap, asCudaStream(stream)),
      "markNonzeroBlocks");
  return scclSuccess;
}

scclResult_t CudaKernels::sketchEncode(const void* x, scclDataType_t dtype,
                                       const SketchShape& shape, const uint8_t* bitmap, void* table,
                                       size_t listed_bound, void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "sketchEncode"));
  cuda_dispatch::RowKeys keys;
  SCCL_CHECK(rowKeys(shape, "sketchEncode", &keys));
  if (shape.count == 0) return scclSuccess;
  return withTemp("sketchEncode", [&](void* temp, size_t* bytes) {
    return cuda_dispatch::sketchEncode(temp, bytes, x, dtype, shape.count, shape.block, shape.rows,
                                       shape.width, keys, bitmap, table,
                                       std::min(listed_bound, shape.count),
                                       listed_bound != kListedUnknown, asCudaStream(stream));
  });
}

scclResult_t CudaKernels::sketchDecode(const void* table, scclDataType_t dtype,
                                       const SketchShape& shape, const uint8_t* bitmap,
                                       uint32_t divisor, void* out, scclDataType_t out_dtype,
                                       void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "sketchDecode"));
  SCCL_REQUIRE_ARG(divisor != 0, "sketchDecode: divisor 0");
  SCCL_REQUIRE_ARG(accumulatorHolds(dtype, out_dtype),
                   "sketchDecode: a %s table cannot decode to %s", dataTypeName(dtype),
                   dataTypeName(out_dtype));
  cuda_dispatch::RowKeys keys;
  SCCL_CHECK(rowKeys(shape, "sketchDecode", &keys));
  SCCL_CUDA_CHECK(
      cuda_dispatch::sketchDecode(table, dtype, shape.count, shape.block, shape.rows, shape.width,
                                  keys, bitmap, divisor, out, out_dtype, asCudaStream(stream)),
      "sketchDecode");
  return scclSuccess;
}

scclResult_t CudaKernels::updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count,
                                             size_t block, const uint8_t* bitmap, const void* sub,
                                             void* stream) const {
  SCCL_CHECK(requireAccType(dtype, "updateMarkedBlocks"));
  SCCL_CUDA_CHECK(
      cuda_dispatch::updateMarkedBlocks(x, dtype, count, block, bitmap, sub, asCudaStream(stream)),
      "updateMarkedBlocks");
  return scclSuccess;
}

}  // namespace sccl
