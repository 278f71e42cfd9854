// The dispatch layer of the CUDA backend (entry cuda_kernels*.cc -> dispatch -> kernels/*.cu, as
// CUB is layered): each function picks the kernel instantiation for a dtype or element width and
// launches it on `stream`. Arguments were validated by the entry. Functions that need temporary
// storage follow CUB's two-phase protocol: with temp == nullptr they only set *temp_bytes.
// Outputs are device memory unless named host_.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/shared/count_check.h"
#include "kernels/shared/scaling_rule.h"
#include "kernels/shared/exdyna_rebalance.h"
#include "kernels/shared/gather_plan.h"
#include "kernels/shared/plan_settle.h"
#include "kernels/shared/reduce_op.h"
#include "kernels/shared/sketch_element.h"
#include "kernels/shared/sync_free_call.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl::cuda_dispatch {

// The row keys of a sketch, passed by value to the kernels (rows <= kMaxSketchRows).
struct RowKeys {
  uint64_t key[kMaxSketchRows];
};

// --- kernels/elementwise.cu ---
cudaError_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype, const void* grad,
                       scclDataType_t grad_dtype, size_t count, uint64_t* nonfinite,
                       cudaStream_t stream);
cudaError_t gather(const void* src, size_t element_bytes, const int64_t* idx, size_t n, void* out,
                   cudaStream_t stream);
// fault (device, may be null): nothing is written unless *fault is kNoIndexFault
// (kernels/shared/gather_plan.h).
cudaError_t scatter(void* dst, size_t element_bytes, const int64_t* idx, const void* vals, size_t n,
                    cudaStream_t stream, const uint32_t* fault = nullptr);
cudaError_t zeroAt(void* dst, size_t element_bytes, const int64_t* idx, size_t n,
                   cudaStream_t stream);
// positions[j] = candidates[positions[j]] in place, -1 where positions[j] < 0.
cudaError_t candidateIndices(const int64_t* candidates, int64_t* positions, size_t n,
                             cudaStream_t stream);
cudaError_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx, const void* vals,
                          scclDataType_t val_dtype, size_t n, double scale, cudaStream_t stream,
                          const uint32_t* fault = nullptr);

// --- kernels/select.cu ---
// Indices i in [begin, end) with magnitude bits >= threshold_bits, ascending; the first
// `capacity` are written (and their raw elements to val if not null); *count = all that qualify.
cudaError_t selectAbove(void* temp, size_t* temp_bytes, const void* x, size_t element_bytes,
                        size_t begin, size_t end, uint64_t threshold_bits, int64_t* idx, void* val,
                        size_t capacity, uint64_t* count, cudaStream_t stream);
// selectAbove with the threshold's pattern read from *threshold_word (device memory).
cudaError_t selectAboveWord(void* temp, size_t* temp_bytes, const void* x, size_t element_bytes,
                            size_t begin, size_t end, const uint64_t* threshold_word, int64_t* idx,
                            size_t capacity, uint64_t* count, cudaStream_t stream);
// *kth_bits = the k-th largest magnitude pattern over [begin, end) (NaN patterns above +inf).
cudaError_t kthLargestAbsBits(void* temp, size_t* temp_bytes, const void* x, size_t element_bytes,
                              size_t begin, size_t end, uint64_t k, uint64_t* kth_bits,
                              cudaStream_t stream);

// --- kernels/histogram.cu ---
// counts[0..bins] as KernelBackend::absBitHistogram (zeroed here first).
cudaError_t absBitHistogram(const void* x, size_t element_bytes, size_t begin, size_t end,
                            uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts,
                            cudaStream_t stream);
// KernelBackend::countCheckWindow: the histogram and a one-thread decision, both doing nothing
// where countCheckRuns(w, check) is false on the device.
cudaError_t countCheckWindow(const void* x, size_t element_bytes, size_t begin, size_t end,
                             const CountCheckWindow& w, uint64_t* counts, uint64_t* check,
                             uint64_t* threshold_bits, cudaStream_t stream);
// accumulate() and absBitHistogram(acc, begin, end, ...) in one pass (counts zeroed here
// first); only for windows histogramInSharedMemory(bins) accepts (else cudaErrorInvalidValue).
bool histogramInSharedMemory(size_t bins);
cudaError_t accumulateHistogram(void* acc, const void* residual, scclDataType_t acc_dtype,
                                const void* grad, scclDataType_t grad_dtype, size_t count,
                                uint64_t* nonfinite, size_t begin, size_t end, uint64_t base_bits,
                                unsigned shift, size_t bins, uint64_t* counts, cudaStream_t stream);

// --- kernels/resident_gather.cu (the device-resident gather call's steps; no host wait) ---
// idx[from, to) = -1.
cudaError_t padIndices(int64_t* idx, size_t from, size_t to, cudaStream_t stream);
// --- kernels/sketch_plan.cu ---
// KernelBackend::markedElements and planSketch.
cudaError_t markedElements(const uint8_t* bitmap, size_t count, size_t block, uint64_t* elements,
                           cudaStream_t stream);
cudaError_t planSketch(const uint64_t* headers, const GatherPlanParams& params, size_t count,
                       size_t block, const uint8_t* union_bitmap, uint64_t* plan,
                       cudaStream_t stream);
// idx[min(*count, capacity), capacity) = -1, *count in device memory.
cudaError_t padIndicesAfterCount(int64_t* idx, const uint64_t* count, size_t capacity,
                                 cudaStream_t stream);
// plan = planGatherCall(records, params, ranges, *fault) (kernels/shared/gather_plan.h), one
// thread.
cudaError_t planGather(const uint64_t* records, const GatherPlanParams& params,
                       const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                       cudaStream_t stream);
// The two-step exchange's plan (planEdgeFromSums, planFromHeaders), one thread each.
cudaError_t planEdge(const uint64_t* summed, const uint64_t* own, const GatherPlanParams& params,
                     uint64_t* edge_words, uint64_t* own_count, cudaStream_t stream);
cudaError_t planHeaders(const uint64_t* headers, const GatherPlanParams& params,
                        const uint64_t* ranges, const uint32_t* fault, const uint64_t* edge_words,
                        uint64_t* plan, cudaStream_t stream);
// KernelBackend::assembleExclusiveIndices; `entries` bounds the work: nranks * slot positions.
cudaError_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                     size_t first_rank, const uint64_t* plan,
                                     const uint64_t* ranges, int64_t* global, uint32_t* fault,
                                     cudaStream_t stream);
// dst[0, 4) = the four words (a kernel: no copy from the host).
cudaError_t setWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                     cudaStream_t stream);
// idx[j] = slot_indices[j] for j < k, and *kth_bits = the smallest magnitude pattern among those
// entries of x (element_bytes wide); *kth_bits is set to all ones first.
cudaError_t topKEmit(const void* x, size_t element_bytes, const int64_t* slot_indices, size_t k,
                     int64_t* idx, uint64_t* kth_bits, cudaStream_t stream);
// --- kernels/plan_settle.cu ---
// KernelBackend::settlePlan: the decision in one thread, then recv = NaN unless the call
// completes.
cudaError_t settlePlan(const PlanSettleArgs& a, cudaStream_t stream);

// dst[0, bytes) = 0 unless *fault != kNoIndexFault; bytes a multiple of 2.
cudaError_t zeroUnlessFault(void* dst, size_t bytes, const uint32_t* fault, cudaStream_t stream);
// When *fault != kNoIndexFault: dst[0, bytes) = src (bytes a multiple of 4) and *published =
// *fault (published: mapped host memory or null).
cudaError_t copyOnFault(void* dst, const void* src, size_t bytes, const uint32_t* fault,
                        uint32_t* published, cudaStream_t stream);

// --- kernels/reduce.cu ---
struct DeviceMoments {
  uint64_t count, nan_count, zero_count;
  double sum_abs, sum_sq, sum_log, max_abs, min_abs;
};
cudaError_t absMoments(void* temp, size_t* temp_bytes, const void* x, scclDataType_t dtype,
                       size_t begin, size_t end, double floor, bool want_log, DeviceMoments* out,
                       cudaStream_t stream);
cudaError_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                              double* sq, cudaStream_t stream);

// --- kernels/top_blocks.cu ---
// KernelBackend::markTopBlocks; *cutoff_sq is device memory (no wait).
cudaError_t markTopBlocks(void* temp, size_t* temp_bytes, const double* sq, size_t blocks,
                          size_t max_blocks, uint8_t* marks, double* cutoff_sq,
                          cudaStream_t stream);

// --- kernels/sketch.cu ---
cudaError_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                              uint8_t* bitmap, cudaStream_t stream);
// bounded: the sort runs over listed_bound entries (at least the listed elements; the rest are
// padding, sorted past every bucket and skipped), nothing waits. Otherwise waits for the stream
// once: the number of listed elements, read back, sizes the sort.
cudaError_t sketchEncode(void* temp, size_t* temp_bytes, const void* x, scclDataType_t dtype,
                         size_t count, size_t block, uint32_t rows, uint64_t width,
                         const RowKeys& keys, const uint8_t* bitmap, void* table,
                         size_t listed_bound, bool bounded, cudaStream_t stream);
cudaError_t sketchDecode(const void* table, scclDataType_t dtype, size_t count, size_t block,
                         uint32_t rows, uint64_t width, const RowKeys& keys, const uint8_t* bitmap,
                         uint32_t divisor, void* out, scclDataType_t out_dtype,
                         cudaStream_t stream);
cudaError_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                               const uint8_t* bitmap, const void* sub, cudaStream_t stream);

// x[i] = x[i] / nranks for i < count, as core/divide_by_ranks.cc divides (float32 arithmetic for
// float32, float16 and bfloat16, rounded to nearest even; double for float64).
cudaError_t divideByRanks(void* x, scclDataType_t dtype, size_t count, int nranks,
                          cudaStream_t stream);

// --- kernels/rank_order_reduce.cu ---
// out[i] = in_0[i] op in_1[i] op ... (rank order), in_r = gathered + r * count elements.
cudaError_t reduceRankOrder(const void* gathered, size_t count, int nranks, scclDataType_t dtype,
                            ReduceOp op, void* out, cudaStream_t stream);

// --- kernels/sync_free.cu (the sync_free reduction's device steps; no host synchronisation) ---
// A slot is 4 + capacity int64 words: k, non-finite count, fingerprint, call number, indices.
struct SlotHeader {
  uint64_t fingerprint;
  const uint64_t* sequence;  // the call number, device memory
};
// Selects |acc| >= *threshold in [bounds[0], bounds[1]) (device memory, at most `items` long),
// keeps the `keep` largest (ties: lowest indices), writes them ascending into slot (padding -1 up
// to `capacity` indices) with the header; nonfinite may be null.
cudaError_t syncFreeSelect(void* temp, size_t* temp_bytes, const void* acc, scclDataType_t dtype,
                           const uint64_t* bounds, size_t items, const double* threshold,
                           size_t keep, size_t capacity, const uint64_t* nonfinite,
                           SlotHeader header, int64_t* slot, cudaStream_t stream);

// --- The device-resident sync_free call's steps (kernels/kernels.h, "The device-resident
// sync_free call"; SyncFreeWords: kernels/shared/sync_free_call.h) ---
// kernels/sync_free.cu: the values at the slots' checked indices, then syncFreeSettle; the
// output (0 or NaN by the status) and the scatter with acc zeroed.
cudaError_t syncFreeGatherSlots(const void* acc, scclDataType_t dtype, const int64_t* gathered,
                                const SyncFreeWords& w, void* values, cudaStream_t stream);
cudaError_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                          scclDataType_t dtype, const int64_t* gathered, const SyncFreeWords& w,
                          const void* values, uint32_t divisor, cudaStream_t stream);
// kernels/resident_union.cu: the union call's plan (kernels.h, planUnion), two-phase (temp null:
// *temp_bytes = the temporary storage it needs).
cudaError_t planUnion(void* temp, size_t* temp_bytes, const uint64_t* slots,
                      const GatherPlanParams& p, size_t capacity, const uint64_t* ranges,
                      int64_t* global, uint64_t* plan, cudaStream_t stream);
// kernels/sync_free_call.cu: the one-thread decisions and the status-dependent residual copy.
cudaError_t syncFreeBeginCall(const SyncFreeWords& w, cudaStream_t stream);
cudaError_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w, uint64_t fingerprint,
                          bool nonfinite_is_error, cudaStream_t stream);
cudaError_t syncFreeSettle(const SyncFreeWords& w, cudaStream_t stream);
cudaError_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w, uint64_t k_target,
                            const ScalingRule* rule, const ExDynaRebalanceRule* rebalance,
                            cudaStream_t stream);
cudaError_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                         bool when_complete, cudaStream_t stream);

}  // namespace sccl::cuda_dispatch
