// The CPU kernel backend: the KernelBackend interface over the kernel families of this folder.
// Work completes before each call returns, so `stream` (NULL for host memory) is not used.
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

class CpuBackend final : public KernelBackend {
 public:
  const char* name() const override {
    switch (activeCpuIsa()) {
      case CpuIsa::Avx512: return "cpu-avx512";
      case CpuIsa::Avx2: return "cpu-avx2";
      case CpuIsa::Scalar: break;
    }
    return "cpu-scalar";
  }

  scclResult_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype,
                          const void* grad, scclDataType_t grad_dtype, size_t count,
                          uint64_t* nonfinite, void*) const override {
    return cpu::accumulate(acc, residual, acc_dtype, grad, grad_dtype, count, nonfinite);
  }

  scclResult_t accumulateSelect(const AccumulateSelectArgs& args, void*) const override {
    return cpu::accumulateSelect(args);
  }

  scclResult_t selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                           double threshold, int64_t* idx, void* val, size_t capacity,
                           size_t* nselected, void*) const override {
    return cpu::selectAbove(x, dtype, begin, end, threshold, idx, val, capacity, nselected);
  }

  scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                      void* out, void*) const override {
    return cpu::gather(src, dtype, idx, n, out);
  }

  scclResult_t gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                             void* out, void*) const override {
    return cpu::gatherAndZero(src, dtype, idx, n, out);
  }

  scclResult_t writeDense(void* dst, scclDataType_t dst_dtype, size_t count, const int64_t* idx,
                          const void* vals, scclDataType_t val_dtype, size_t n, double scale,
                          void*) const override {
    return cpu::writeDense(dst, dst_dtype, count, idx, vals, val_dtype, n, scale);
  }

  scclResult_t scatter(void* dst, scclDataType_t dtype, const int64_t* idx, const void* vals,
                       size_t n, void*) const override {
    return cpu::scatter(dst, dtype, idx, vals, n);
  }

  scclResult_t zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n,
                      void*) const override {
    return cpu::zeroAt(dst, dtype, idx, n);
  }

  scclResult_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                             const void* vals, scclDataType_t val_dtype, size_t n, double scale,
                             void*) const override {
    return cpu::scatterValues(dst, dst_dtype, idx, vals, val_dtype, n, scale);
  }

  scclResult_t fillZero(void* dst, size_t bytes, void*) const override {
    return cpu::fillZero(dst, bytes);
  }

  scclResult_t kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                             uint64_t k, double* value, void*) const override {
    return cpu::kthLargestAbs(x, dtype, begin, end, k, value);
  }

  scclResult_t absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                          double floor, bool want_log, AbsMoments* out, void*) const override {
    return cpu::absMoments(x, dtype, begin, end, floor, want_log, out);
  }

  scclResult_t absBitHistogram(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                               uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts,
                               void*) const override {
    return cpu::absBitHistogram(x, dtype, begin, end, base_bits, shift, bins, counts);
  }

  scclResult_t countCheckWindow(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                const CountCheckWindow& w, uint64_t* counts, uint64_t* check,
                                uint64_t* threshold_bits, void*) const override {
    return cpu::countCheckWindow(x, dtype, begin, end, w, counts, check, threshold_bits);
  }

  scclResult_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                                 double* sq, void*) const override {
    return cpu::blockSquaredNorms(x, dtype, count, block, sq);
  }

  scclResult_t markTopBlocks(const double* sq, size_t blocks, size_t max_blocks, uint8_t* marks,
                             double* cutoff_sq, void*) const override {
    return cpu::markTopBlocks(sq, blocks, max_blocks, marks, cutoff_sq);
  }

  scclResult_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                                 uint8_t* bitmap, void*) const override {
    return cpu::markNonzeroBlocks(x, dtype, count, block, bitmap);
  }

  scclResult_t sketchEncode(const void* x, scclDataType_t dtype, const SketchShape& shape,
                            const uint8_t* bitmap, void* table, size_t, void*) const override {
    return cpu::sketchEncode(x, dtype, shape, bitmap, table);
  }

  scclResult_t sketchDecode(const void* table, scclDataType_t dtype, const SketchShape& shape,
                            const uint8_t* bitmap, uint32_t divisor, void* out,
                            scclDataType_t out_dtype, void*) const override {
    return cpu::sketchDecode(table, dtype, shape, bitmap, divisor, out, out_dtype);
  }

  scclResult_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                                  const uint8_t* bitmap, const void* sub, void*) const override {
    return cpu::updateMarkedBlocks(x, dtype, count, block, bitmap, sub);
  }

  scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                 double threshold, size_t n, int64_t* idx, size_t padded,
                                 void*) const override {
    return cpu::selectAbovePadded(x, dtype, begin, end, threshold, n, idx, padded);
  }

  scclResult_t selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                      scclDataType_t dtype, size_t ncand, double threshold,
                                      size_t n, int64_t* idx, size_t padded, void*) const override {
    return cpu::selectCandidatesPadded(cand_idx, cand_val, dtype, ncand, threshold, n, idx, padded);
  }

  scclResult_t markedElements(const uint8_t* bitmap, size_t count, size_t block,
                              uint64_t* elements, void*) const override {
    return cpu::markedElements(bitmap, count, block, elements);
  }

  scclResult_t planSketch(const uint64_t* headers, const GatherPlanParams& params, size_t count,
                          size_t block, const uint8_t* union_bitmap, uint64_t* plan,
                          void*) const override {
    return cpu::planSketch(headers, params, count, block, union_bitmap, plan);
  }

  scclResult_t selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  double threshold, size_t capacity, int64_t* idx, uint64_t* count,
                                  void*) const override {
    return cpu::selectAboveCounted(x, dtype, begin, end, threshold, capacity, idx, count);
  }

  scclResult_t selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                    const uint64_t* threshold_bits, size_t capacity, int64_t* idx,
                                    uint64_t* count, void*) const override {
    return cpu::selectAboveCountedAt(x, dtype, begin, end, threshold_bits, capacity, idx, count);
  }

  scclResult_t planGather(const uint64_t* records, const GatherPlanParams& params,
                          const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                          void*) const override {
    return cpu::planGather(records, params, ranges, fault, plan);
  }

  scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                        size_t first_rank, const uint64_t* plan,
                                        const uint64_t* ranges, int64_t* global, uint32_t* fault,
                                        void*) const override {
    return cpu::assembleExclusiveIndices(gathered, nranks, slot, first_rank, plan, ranges, global,
                                         fault);
  }

  scclResult_t planEdge(const uint64_t* summed, const uint64_t* own,
                        const GatherPlanParams& params, uint64_t* edge_words, uint64_t* own_count,
                        void*) const override {
    planEdgeFromSums(summed, own, params, edge_words, own_count);
    return scclSuccess;
  }

  scclResult_t planHeaders(const uint64_t* headers, const GatherPlanParams& params,
                           const uint64_t* ranges, const uint32_t* fault,
                           const uint64_t* edge_words, uint64_t* plan, void*) const override {
    planFromHeaders(headers, params, ranges, *fault, edge_words, plan);
    return scclSuccess;
  }

  scclResult_t selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end, size_t k,
                          int64_t* idx, uint64_t* kth_bits, void*) const override {
    return cpu::selectTopK(x, dtype, begin, end, k, idx, kth_bits);
  }

  scclResult_t selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                       scclDataType_t dtype, size_t ncand, double threshold,
                                       size_t capacity, int64_t* idx, uint64_t* count,
                                       void*) const override {
    return cpu::selectCandidatesCounted(cand_idx, cand_val, dtype, ncand, threshold, capacity, idx,
                                        count);
  }

  scclResult_t selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                    scclDataType_t dtype, size_t ncand, size_t k, int64_t* idx,
                                    uint64_t* kth_bits, void*) const override {
    return cpu::selectTopKCandidates(cand_idx, cand_val, dtype, ncand, k, idx, kth_bits);
  }

  scclResult_t writeDenseUnlessFault(void* dst, scclDataType_t dst_dtype, size_t count,
                                     const int64_t* idx, const void* vals,
                                     scclDataType_t val_dtype, size_t n, double scale,
                                     const uint32_t* fault, void*) const override {
    if (*fault != kNoIndexFault) return scclSuccess;
    return cpu::writeDense(dst, dst_dtype, count, idx, vals, val_dtype, n, scale);
  }

  scclResult_t copyOnFault(void* dst, const void* src, size_t bytes, const uint32_t* fault,
                           uint32_t* published, void*) const override {
    if (*fault == kNoIndexFault) return scclSuccess;
    if (bytes > 0) std::memcpy(dst, src, bytes);
    if (published != nullptr) *published = *fault;
    return scclSuccess;
  }

  scclResult_t planUnion(const uint64_t* slots, const GatherPlanParams& params, size_t capacity,
                         const uint64_t* ranges, int64_t* global, uint64_t* plan,
                         void*) const override {
    return cpu::planUnion(slots, params, capacity, ranges, global, plan);
  }

  scclResult_t syncFreeBeginCall(const SyncFreeWords& w, void*) const override {
    return cpu::syncFreeBeginCall(w);
  }

  scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype, const uint64_t* bounds,
                              size_t, const SyncFreeCandidates& candidates, const double* threshold,
                              size_t keep, size_t capacity, const uint64_t* nonfinite,
                              uint64_t fingerprint, const uint64_t* sequence, int64_t* slot,
                              void*) const override {
    return cpu::syncFreeSelect(acc, acc_dtype, bounds, candidates, threshold, keep, capacity,
                               nonfinite, fingerprint, sequence, slot);
  }

  scclResult_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w, uint64_t fingerprint,
                             bool nonfinite_is_error, void*) const override {
    return cpu::syncFreeCheck(gathered, w, fingerprint, nonfinite_is_error);
  }

  scclResult_t syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                   const int64_t* gathered, const SyncFreeWords& w, void* values,
                                   void*) const override {
    return cpu::syncFreeGatherSlots(acc, acc_dtype, gathered, w, values);
  }

  scclResult_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                             scclDataType_t acc_dtype, const int64_t* gathered,
                             const SyncFreeWords& w, const void* values, uint32_t divisor,
                             void*) const override {
    return cpu::syncFreeWrite(recv, recv_dtype, count, acc, acc_dtype, gathered, w, values,
                              divisor);
  }

  scclResult_t settlePlan(const PlanSettleArgs& a, void*) const override {
    return cpu::settlePlan(a);
  }

  scclResult_t writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                          void*) const override {
    return cpu::writeWords(dst, w0, w1, w2, w3);
  }

  scclResult_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                            bool when_complete, void*) const override {
    return cpu::copyByStatus(dst, src, bytes, status, when_complete);
  }

  scclResult_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w, uint64_t k_target,
                               const ScalingRule* rule, const ExDynaRebalanceRule* rebalance,
                               void*) const override {
    return cpu::syncFreeEndCall(gathered, w, k_target, rule, rebalance);
  }
};

}  // namespace

const KernelBackend& cpuKernels() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace sccl
