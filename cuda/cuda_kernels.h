// The CUDA backend: the KernelBackend interface (kernels/kernels.h) on device memory. Layered as CUB is: this entry validates arguments
// and owns the workspace, cuda/dispatch.h picks the instantiation, cuda/kernels/*.cu hold the
// kernels. Every call is ordered on the caller's stream (`stream` is a cudaStream_t; null is the
// legacy default stream) and returns once the work is enqueued, except where noted.
//
// Memory: data, index, bitmap, table and count arrays are device memory. Synchronisation points
// (the only calls that wait for the stream): selectAbove's *nselected, kthLargestAbs's *value
// and absMoments's *out are host values, so those calls copy a few bytes to pinned host memory and
// synchronise the stream. That count transfer is the one synchronisation of the count-exchanging
// algorithms (docs/gpu.md); the resident calls' kernels have none.
//
// One CudaKernels per communicator: its workspace grows during the first calls and is reused
// after, so a training loop's steady state allocates nothing. Not for concurrent streams.
#pragma once

#include <memory>

#include "cuda/workspace.h"
#include "kernels/shared/scaling_rule.h"
#include "kernels/kernels.h"

namespace sccl {

class CudaKernels final : public KernelBackend {
 public:
  const char* name() const override { return "cuda"; }

  scclResult_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype,
                          const void* grad, scclDataType_t grad_dtype, size_t count,
                          uint64_t* nonfinite, void* stream) const override;
  // nonfinite above is a device word (added to, not overwritten; zero it first).
  // The fused pass, composed of the three kernels it replaces (accumulate, absBitHistogram over
  // the range, selectAbove at the floor): the same results, three passes (docs/gpu.md).
  scclResult_t accumulateSelect(const AccumulateSelectArgs& args, void* stream) const override;
  scclResult_t selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                           double threshold, int64_t* idx, void* val, size_t capacity,
                           size_t* nselected, void* stream) const override;
  scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                      void* out, void* stream) const override;
  // gather then zeroAt; fillZero then scatterValues (two kernels each, the same results).
  scclResult_t gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                             void* out, void* stream) const override;
  scclResult_t writeDense(void* dst, scclDataType_t dst_dtype, size_t count, const int64_t* idx,
                          const void* vals, scclDataType_t val_dtype, size_t n, double scale,
                          void* stream) const override;
  scclResult_t scatter(void* dst, scclDataType_t dtype, const int64_t* idx, const void* vals,
                       size_t n, void* stream) const override;
  scclResult_t zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n,
                      void* stream) const override;
  scclResult_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                             const void* vals, scclDataType_t val_dtype, size_t n, double scale,
                             void* stream) const override;
  scclResult_t fillZero(void* dst, size_t bytes, void* stream) const override;
  scclResult_t kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                             uint64_t k, double* value, void* stream) const override;
  scclResult_t absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                          double floor, bool want_log, AbsMoments* out,
                          void* stream) const override;
  scclResult_t absBitHistogram(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                               uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts,
                               void* stream) const override;
  scclResult_t countCheckWindow(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                const CountCheckWindow& w, uint64_t* counts, uint64_t* check,
                                uint64_t* threshold_bits, void* stream) const override;
  scclResult_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                                 double* sq, void* stream) const override;
  scclResult_t markTopBlocks(const double* sq, size_t blocks, size_t max_blocks, uint8_t* marks,
                             double* cutoff_sq, void* stream) const override;
  scclResult_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                                 uint8_t* bitmap, void* stream) const override;
  // shape.row_keys is host memory (passed to the kernels by value).
  scclResult_t sketchEncode(const void* x, scclDataType_t dtype, const SketchShape& shape,
                            const uint8_t* bitmap, void* table, size_t listed_bound,
                            void* stream) const override;
  scclResult_t sketchDecode(const void* table, scclDataType_t dtype, const SketchShape& shape,
                            const uint8_t* bitmap, uint32_t divisor, void* out,
                            scclDataType_t out_dtype, void* stream) const override;
  scclResult_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                                  const uint8_t* bitmap, const void* sub,
                                  void* stream) const override;

  // The device-resident gather call's kernels: none waits for the stream.
  scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                 double threshold, size_t n, int64_t* idx, size_t padded,
                                 void* stream) const override;
  scclResult_t selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                      scclDataType_t dtype, size_t ncand, double threshold,
                                      size_t n, int64_t* idx, size_t padded,
                                      void* stream) const override;
  scclResult_t markedElements(const uint8_t* bitmap, size_t count, size_t block,
                              uint64_t* elements, void* stream) const override;
  scclResult_t planSketch(const uint64_t* headers, const GatherPlanParams& params, size_t count,
                          size_t block, const uint8_t* union_bitmap, uint64_t* plan,
                          void* stream) const override;
  scclResult_t selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  double threshold, size_t capacity, int64_t* idx, uint64_t* count,
                                  void* stream) const override;
  scclResult_t selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                    const uint64_t* threshold_bits, size_t capacity, int64_t* idx,
                                    uint64_t* count, void* stream) const override;
  scclResult_t planGather(const uint64_t* records, const GatherPlanParams& params,
                          const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                          void* stream) const override;
  // The two-step exchange's plan: one thread each.
  scclResult_t planEdge(const uint64_t* summed, const uint64_t* own,
                        const GatherPlanParams& params, uint64_t* edge_words, uint64_t* own_count,
                        void* stream) const override;
  scclResult_t planHeaders(const uint64_t* headers, const GatherPlanParams& params,
                           const uint64_t* ranges, const uint32_t* fault,
                           const uint64_t* edge_words, uint64_t* plan,
                           void* stream) const override;
  // The capped selection of the sync_free slot (threshold 0, capacity k: the k largest, ties to
  // the lowest indices), then the indices copied out with their smallest magnitude.
  scclResult_t selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end, size_t k,
                          int64_t* idx, uint64_t* kth_bits, void* stream) const override;
  // selectAboveCounted over the candidates' values (positions), then each kept position replaced
  // by its candidate's index.
  scclResult_t selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                       scclDataType_t dtype, size_t ncand, double threshold,
                                       size_t capacity, int64_t* idx, uint64_t* count,
                                       void* stream) const override;
  // selectTopK over the candidates' values (positions), then each position replaced by its
  // candidate's index.
  scclResult_t selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                    scclDataType_t dtype, size_t ncand, size_t k, int64_t* idx,
                                    uint64_t* kth_bits, void* stream) const override;
  scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                        size_t first_rank, const uint64_t* plan,
                                        const uint64_t* ranges, int64_t* global, uint32_t* fault,
                                        void* stream) const override;
  // A zeroing kernel and the scatter, both skipped on a device fault (two kernels).
  scclResult_t writeDenseUnlessFault(void* dst, scclDataType_t dst_dtype, size_t count,
                                     const int64_t* idx, const void* vals,
                                     scclDataType_t val_dtype, size_t n, double scale,
                                     const uint32_t* fault, void* stream) const override;
  scclResult_t copyOnFault(void* dst, const void* src, size_t bytes, const uint32_t* fault,
                           uint32_t* published, void* stream) const override;

  // x = x / nranks (scclAvg of the dense collectives), bitwise the CPU's divideByRanks; the four
  // floating types.
  scclResult_t divideByRanks(void* x, scclDataType_t dtype, size_t count, int nranks,
                             void* stream) const;

  // Five launches: the header check, the entry keys, CUB's radix sort and unique, the length.
  scclResult_t planUnion(const uint64_t* slots, const GatherPlanParams& params, size_t capacity,
                         const uint64_t* ranges, int64_t* global, uint64_t* plan,
                         void* stream) const override;

  // The device-resident sync_free call: no synchronisation, sizes from the fixed capacity.
  scclResult_t syncFreeBeginCall(const SyncFreeWords& w, void* stream) const override;
  scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype, const uint64_t* bounds,
                              size_t items, const SyncFreeCandidates& candidates,
                              const double* threshold, size_t keep, size_t capacity,
                              const uint64_t* nonfinite, uint64_t fingerprint,
                              const uint64_t* sequence, int64_t* slot, void* stream) const override;
  scclResult_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w, uint64_t fingerprint,
                             bool nonfinite_is_error, void* stream) const override;
  // Two kernels: the gather, then the one-thread settling of its check.
  scclResult_t syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                   const int64_t* gathered, const SyncFreeWords& w, void* values,
                                   void* stream) const override;
  // Two kernels: the output's fill (0 or NaN by the status), then the scatter.
  scclResult_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                             scclDataType_t acc_dtype, const int64_t* gathered,
                             const SyncFreeWords& w, const void* values, uint32_t divisor,
                             void* stream) const override;
  scclResult_t settlePlan(const PlanSettleArgs& a, void* stream) const override;
  scclResult_t writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                          void* stream) const override;
  scclResult_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                            bool when_complete, void* stream) const override;
  scclResult_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w, uint64_t k_target,
                               const ScalingRule* rule, const ExDynaRebalanceRule* rebalance,
                               void* stream) const override;

 private:
  // CUB's two-phase protocol against the workspace: size, reserve, run.
  template <typename Run>
  scclResult_t withTemp(const char* what, Run&& run) const;
  scclResult_t copyToHost(void* host, const void* device, size_t bytes, void* stream,
                          const char* what) const;

  mutable CudaWorkspace workspace_;
  mutable CudaWorkspace result_;  // small device results read back by the synchronising calls
  mutable CudaWorkspace topk_;    // selectTopK's slot and the words its selection reads
};

}  // namespace sccl
