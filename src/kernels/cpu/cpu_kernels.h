// The CPU implementations of the kernel families, one source file each; cpu_backend.cc exposes
// them through the KernelBackend interface. Arguments are already validated (see kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace sccl::cpu {

scclResult_t selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                         double threshold, int64_t* idx, void* val, size_t capacity,
                         size_t* nselected);

scclResult_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype, const void* grad,
                        scclDataType_t grad_dtype, size_t count, uint64_t* nonfinite);

// One part of accumulate() on the calling thread, for the kernels that fuse it with more work:
// elements [begin, end) with the ISA's vector loop; returns their non-finite count.
using AccumulateRangeFn = uint64_t (*)(CpuIsa isa, void* acc, const void* residual,
                                       const void* grad, size_t begin, size_t end);
// Null when the (acc, grad) pair is not supported.
AccumulateRangeFn accumulateRangeFor(scclDataType_t acc_dtype, scclDataType_t grad_dtype,
                                     bool has_residual);

scclResult_t accumulateSelect(const AccumulateSelectArgs& args);

scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n, void* out);
scclResult_t gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                           void* out);
scclResult_t writeDense(void* dst, scclDataType_t dst_dtype, size_t count, const int64_t* idx,
                        const void* vals, scclDataType_t val_dtype, size_t n, double scale);
scclResult_t scatter(void* dst, scclDataType_t dtype, const int64_t* idx, const void* vals,
                     size_t n);
scclResult_t zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n);
scclResult_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                           const void* vals, scclDataType_t val_dtype, size_t n, double scale);
scclResult_t fillZero(void* dst, size_t bytes);
scclResult_t settlePlan(const PlanSettleArgs& a);
scclResult_t writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3);

scclResult_t kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                           uint64_t k, double* value);

scclResult_t absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end, double floor,
                        bool want_log, AbsMoments* out);

scclResult_t absBitHistogram(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                             uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts);
scclResult_t countCheckWindow(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                              const CountCheckWindow& w, uint64_t* counts, uint64_t* check,
                              uint64_t* threshold_bits);

scclResult_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                               double* sq);
scclResult_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                               uint8_t* bitmap);
scclResult_t markTopBlocks(const double* sq, size_t blocks, size_t max_blocks, uint8_t* marks,
                           double* cutoff_sq);
scclResult_t sketchEncode(const void* x, scclDataType_t dtype, const SketchShape& shape,
                          const uint8_t* bitmap, void* table);
scclResult_t sketchDecode(const void* table, scclDataType_t dtype, const SketchShape& shape,
                          const uint8_t* bitmap, uint32_t divisor, void* out,
                          scclDataType_t out_dtype);
scclResult_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                                const uint8_t* bitmap, const void* sub);

// The device-resident gather call's kernels (resident_gather.cc).
scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                               double threshold, size_t n, int64_t* idx, size_t padded);
scclResult_t selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                    scclDataType_t dtype, size_t ncand, double threshold, size_t n,
                                    int64_t* idx, size_t padded);
scclResult_t markedElements(const uint8_t* bitmap, size_t count, size_t block,
                            uint64_t* elements);
scclResult_t planSketch(const uint64_t* headers, const GatherPlanParams& params, size_t count,
                        size_t block, const uint8_t* union_bitmap, uint64_t* plan);
scclResult_t selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                double threshold, size_t capacity, int64_t* idx, uint64_t* count);
scclResult_t selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  const uint64_t* threshold_bits, size_t capacity, int64_t* idx,
                                  uint64_t* count);
scclResult_t selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                     scclDataType_t dtype, size_t ncand, double threshold,
                                     size_t capacity, int64_t* idx, uint64_t* count);
scclResult_t planGather(const uint64_t* records, const GatherPlanParams& params,
                        const uint64_t* ranges, const uint32_t* fault, uint64_t* plan);
scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                      size_t first_rank, const uint64_t* plan,
                                      const uint64_t* ranges, int64_t* global, uint32_t* fault);
scclResult_t selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end, size_t k,
                        int64_t* idx, uint64_t* kth_bits);
scclResult_t selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                  scclDataType_t dtype, size_t ncand, size_t k, int64_t* idx,
                                  uint64_t* kth_bits);

// The device-resident union call's plan (resident_union.cc).
scclResult_t planUnion(const uint64_t* slots, const GatherPlanParams& params, size_t capacity,
                       const uint64_t* ranges, int64_t* global, uint64_t* plan);

// The device-resident sync_free call's kernels (sync_free.cc).
scclResult_t syncFreeBeginCall(const SyncFreeWords& w);
scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype, const uint64_t* bounds,
                            const SyncFreeCandidates& candidates, const double* threshold,
                            size_t keep, size_t capacity, const uint64_t* nonfinite,
                            uint64_t fingerprint, const uint64_t* sequence, int64_t* slot);
scclResult_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w, uint64_t fingerprint,
                           bool nonfinite_is_error);
scclResult_t syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                 const int64_t* gathered, const SyncFreeWords& w, void* values);
scclResult_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                           scclDataType_t acc_dtype, const int64_t* gathered,
                           const SyncFreeWords& w, const void* values, uint32_t divisor);
scclResult_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                          bool when_complete);
scclResult_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w, uint64_t k_target,
                             const ScalingRule* rule, const ExDynaRebalanceRule* rebalance);

}  // namespace sccl::cpu
