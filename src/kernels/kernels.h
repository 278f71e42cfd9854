// The kernel interface: the element-wise work of the sparse collectives, which every backend
// (CPU here, CUDA in cuda/) provides with identical results.
//
// Contract shared by every kernel:
//  - Arguments were validated by the caller (API or algorithm layer): pointers are non-null where
//    needed, ranges lie inside the buffers, indices are < the buffer length. Kernels do not
//    re-check, so the layer that receives indices from a peer must bounds-check them first.
//  - `stream` is the caller's stream (cudaStream_t on CUDA, NULL on the CPU backend). Work is
//    ordered on it; the CPU backend completes before returning.
//  - Results are deterministic and independent of the number of threads and of the instruction
//    set chosen at run time (AVX-512, AVX2 or scalar): bitwise identical outputs on every run.
//  - NaN is never hidden: the library is built without -ffast-math. A computed value that is
//    NaN is written as the canonical quiet NaN of its format (kernels/shared/canonical_nan.h),
//    whatever the operands' payloads, so that every backend writes the same bits; values that
//    are only moved keep theirs, conversions are kernels/shared/half.h's (docs/kernels.md, "NaN
//    payloads").
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/count_check.h"
#include "kernels/shared/count_sketch.h"
#include "kernels/shared/gather_plan.h"
#include "kernels/shared/plan_settle.h"
#include "kernels/shared/sync_free_call.h"
#include "kernels/shared/union_plan.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Statistics of |x| over the elements of a range with |x| >= floor (floor 0: all elements).
// Accumulated in double; sums are combined in a fixed order independent of threads and ISA.
struct AbsMoments {
  uint64_t count = 0;       // elements with |x| >= floor (NaN excluded)
  uint64_t nan_count = 0;   // NaN elements in the range (never counted above)
  double sum_abs = 0;       // sum |x|
  double sum_sq = 0;        // sum x^2
  double sum_log = 0;       // sum ln|x| over counted elements with |x| > 0 (only if want_log)
  uint64_t zero_count = 0;  // counted elements equal to 0 (left out of sum_log)
  double max_abs = 0;       // max |x| over counted elements (0 if none)
  double min_abs = 0;       // min |x| over counted elements (0 if none)
};

// The fused pass of a sparse all-reduce with error feedback (KernelBackend::accumulateSelect):
// what accumulate(), absBitHistogram() and selectAbove() compute, in one streaming pass over the
// gradient and the residual (docs/kernels.md, "The fused pass").
struct AccumulateSelectArgs {
  // accumulate(): acc[i] = residual[i] + grad[i] widened, i < count (residual null: the gradient
  // widened); *nonfinite as accumulate()'s (the kernels' memory; may be null).
  void* acc = nullptr;
  const void* residual = nullptr;
  scclDataType_t acc_dtype = scclFloat32;
  const void* grad = nullptr;
  scclDataType_t grad_dtype = scclFloat32;
  size_t count = 0;
  uint64_t* nonfinite = nullptr;
  // The dense output (optional): out[0, count) = 0 in out_dtype's width, each block written after
  // its gradient was read, so out may equal grad (an in-place call); fillZero(out) after the pass
  // gives the same bits. (The sparse all-reduce does not use it: it leaves recvbuf untouched
  // until every peer's data has passed its checks, then writes it once with writeDense.)
  void* out = nullptr;
  scclDataType_t out_dtype = scclFloat32;
  // Selection range [begin, end) of acc (empty: the pass only accumulates).
  size_t begin = 0, end = 0;
  // Candidates: selectAbove(acc, begin, end, floor, idx, val, capacity, ncandidates) on the
  // accumulated values: ascending indices, values in acc's type (val may be null), at most
  // capacity written, *ncandidates (host memory) = the number qualifying. idx null: none.
  double floor = 0;
  int64_t* idx = nullptr;
  void* val = nullptr;
  size_t capacity = 0;
  size_t* ncandidates = nullptr;
  // Histogram (bins > 0): counts = absBitHistogram(acc, begin, end, base_bits, shift, bins) (the
  // kernels' memory). With candidates, the floor must not lie above the window's base
  // (thresholdBits(acc_dtype, floor) <= base_bits): every counted element is then a candidate,
  // which lets a backend build the histogram from the candidates alone.
  uint64_t base_bits = 0;
  unsigned shift = 0;
  size_t bins = 0;
  uint64_t* counts = nullptr;
};

// The fused pass's candidates of a sync_free selection (KernelBackend::syncFreeSelect): at most
// `room` ascending indices of the range at or above the threshold, *count (the kernels' memory)
// the number qualifying, which may exceed room. idx null: none.
struct SyncFreeCandidates {
  const int64_t* idx = nullptr;
  const size_t* count = nullptr;
  size_t room = 0;
};

// sketchEncode's listed_bound when the caller knows none.
inline constexpr size_t kListedUnknown = SIZE_MAX;

class KernelBackend {
 public:
  virtual ~KernelBackend() = default;

  // Short name with the chosen instruction set, e.g. "cpu-avx512".
  virtual const char* name() const = 0;

  // acc[i] = residual[i] + grad[i], i < count, grad widened exactly to acc's type: acc is
  // float32 for float32/float16/bfloat16 gradients and float64 for float64 gradients (other
  // pairs are scclInvalidArgument); residual has acc's type. acc may equal residual (in place),
  // otherwise the two do not overlap; residual may be null (acc[i] = grad[i] widened). If
  // nonfinite is not null, *nonfinite = the number of i with acc[i] NaN or +-inf, counted in the
  // same pass, so a caller can discard a step with a bad gradient and keep its residual intact.
  virtual scclResult_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype,
                                  const void* grad, scclDataType_t grad_dtype, size_t count,
                                  uint64_t* nonfinite, void* stream) const = 0;

  // accumulate(), then absBitHistogram() and selectAbove() on the accumulated range (and
  // fillZero() of the output), with the results of those calls bit for bit
  // (AccumulateSelectArgs), in one pass where the
  // backend can: the CPU accumulates, counts and selects block by block while the block is in
  // cache, so memory sees the three streams of accumulate() alone.
  virtual scclResult_t accumulateSelect(const AccumulateSelectArgs& args, void* stream) const = 0;

  // The selection primitive behind scclPartitionedSelect (same contract, arguments already
  // validated): elements of [begin, end) with !(|x| < threshold), ascending indices; writes at
  // most capacity entries, *nselected = number qualifying. val may be null.
  virtual scclResult_t selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                   double threshold, int64_t* idx, void* val, size_t capacity,
                                   size_t* nselected, void* stream) const = 0;

  // out[j] = src[idx[j]], j < n.
  virtual scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                              void* out, void* stream) const = 0;

  // out[j] = src[idx[j]], then src[idx[j]] = 0, j < n, indices distinct: gather() and zeroAt()
  // with one visit of each element (the residual's entries that were sent).
  virtual scclResult_t gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx,
                                     size_t n, void* out, void* stream) const = 0;

  // fillZero(dst, count elements) and then scatterValues(dst, ..., idx, vals, n, scale), indices
  // distinct, with the results of those two calls bit for bit, writing dst once: the dense
  // output of a sparse all-reduce. Fastest when idx is a few ascending runs (the exchange's
  // slices, one per rank); the CPU zeroes the output block by block and scatters each block's
  // entries while it is in cache.
  virtual scclResult_t writeDense(void* dst, scclDataType_t dst_dtype, size_t count,
                                  const int64_t* idx, const void* vals, scclDataType_t val_dtype,
                                  size_t n, double scale, void* stream) const = 0;

  // dst[idx[j]] = vals[j], j < n (indices distinct; with repeats the last write wins).
  virtual scclResult_t scatter(void* dst, scclDataType_t dtype, const int64_t* idx,
                               const void* vals, size_t n, void* stream) const = 0;

  // dst[idx[j]] = 0, j < n.
  virtual scclResult_t zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n,
                              void* stream) const = 0;

  // dst[idx[j]] = vals[j] * scale converted to dst_dtype, j < n (indices distinct). float32 values
  // are multiplied in float32 by (float)scale and rounded to a float32, float16 or bfloat16
  // destination to nearest even (kernels/shared/half.h); float64 values go to float64, multiplied
  // in double. A scale that is 1 in the values' precision copies or converts without multiplying
  // (bit for bit, signalling NaN included). Other pairs are scclInvalidArgument.
  virtual scclResult_t scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                                     const void* vals, scclDataType_t val_dtype, size_t n,
                                     double scale, void* stream) const = 0;

  // dst[0, bytes) = 0.
  virtual scclResult_t fillZero(void* dst, size_t bytes, void* stream) const = 0;

  // *value = the k-th largest |x| over [begin, end), exactly (k = 1: the maximum), with NaN above
  // +inf (a NaN among the k largest magnitudes can be the answer, returned as NaN). For the four
  // floating types; k outside [1, end - begin] is scclInvalidArgument.
  virtual scclResult_t kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                     uint64_t k, double* value, void* stream) const = 0;

  // Moments of |x| over [begin, end) restricted to |x| >= floor. sum_log is computed only when
  // want_log (it costs a logarithm per counted element).
  virtual scclResult_t absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  double floor, bool want_log, AbsMoments* out,
                                  void* stream) const = 0;

  // Histogram of |x| over [begin, end) on the bit patterns of the magnitudes, for float32 and
  // float64 (the accumulator types). Non-negative IEEE values order like their bit patterns read
  // as unsigned integers (+inf above every finite value, NaN above +inf), so with b(v) the bits
  // of |v|: counts[j] = #{i : base_bits + j 2^shift <= b(x_i) < base_bits + (j+1) 2^shift} for
  // j < bins, counts[bins] = #{i : b(x_i) >= base_bits + bins 2^shift} (inf and NaN there when
  // the window lies below them); elements below base_bits are not counted. counts has bins + 1
  // entries and is overwritten. An edge base_bits + j 2^shift, read back as a value e, splits
  // the elements exactly as selectAbove(threshold = e) does, so the count at or above every edge
  // is known before selecting. base_bits + bins 2^shift must fit the type's bit width.
  virtual scclResult_t absBitHistogram(const void* x, scclDataType_t dtype, size_t begin,
                                       size_t end, uint64_t base_bits, unsigned shift, size_t bins,
                                       uint64_t* counts, void* stream) const = 0;

  // SIDCo's count check with nothing read back (kernels/shared/count_check.h): where
  // countCheckRuns(w, check), counts = absBitHistogram(x, begin, end, w's window) and
  // decideCountCheck(counts, w, check, threshold_bits); else nothing. counts (w.bins + 1 words),
  // check (kCheckWords) and *threshold_bits are in the kernels' memory. The accumulator types.
  virtual scclResult_t countCheckWindow(const void* x, scclDataType_t dtype, size_t begin,
                                        size_t end, const CountCheckWindow& w, uint64_t* counts,
                                        uint64_t* check, uint64_t* threshold_bits,
                                        void* stream) const = 0;

  // --- Count sketch (S2 Reducer; hash and sign functions: kernels/shared/count_sketch.h) ---
  // Blocks are [b * block, min((b + 1) * block, count)); a bitmap holds one byte per block and
  // marks block b when bitmap[b] != 0. Sketch kernels take float32 or float64 data (the
  // accumulator types) with a table of the same type.

  // sq[b] = sum over block b of x[i]^2, in double, in index order (NaN and inf propagate).
  virtual scclResult_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count,
                                         size_t block, double* sq, void* stream) const = 0;

  // S2's "topk" block selection: marks[b] = 1 for the keep = min(max_blocks, #{b : sq[b] > 0})
  // blocks of largest squared norm (a NaN norm counts as +inf; ties to the lower block index),
  // 0 for every other block; *cutoff_sq = the keep-th largest (+inf for NaN; 0 when keep is 0).
  // sq, marks and cutoff_sq are the kernels' memory: nothing comes back to the host.
  virtual scclResult_t markTopBlocks(const double* sq, size_t blocks, size_t max_blocks,
                                     uint8_t* marks, double* cutoff_sq, void* stream) const = 0;

  // bitmap[b] = 1 if block b holds an element that is not zero (NaN counts), else 0.
  virtual scclResult_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count,
                                         size_t block, uint8_t* bitmap, void* stream) const = 0;

  // table[j * width + bucket_j(i)] += sign_j(i) * x[i] for every row j < rows and every i in a
  // marked block (bitmap null: every i) with x[i] != 0. The table is not cleared (encoding is
  // linear: callers zero it first or add several vectors). Each row is added in index order, so
  // the result is deterministic. listed_bound: at least the number of such i (the elements of the
  // marked blocks, markedElements; bitmap null: the count), or kListedUnknown: a backend that
  // lists and sorts the entries (CUDA) sizes its sort by the bound, and reads the count back (one
  // wait) only when it is unknown. The CPU does not need it.
  virtual scclResult_t sketchEncode(const void* x, scclDataType_t dtype, const SketchShape& shape,
                                    const uint8_t* bitmap, void* table, size_t listed_bound,
                                    void* stream) const = 0;

  // For every i in a marked block (bitmap null: every i): out[i] = the median over rows j of
  // sign_j(i) * table[j * width + bucket_j(i)] (an even row count averages the middle two), in
  // the table's type, divided by `divisor` unless it is 1, converted to out_dtype (float32 table:
  // float32, float16 or bfloat16 rounded to nearest even; float64 table: float64). Elements of
  // unmarked blocks get 0.
  virtual scclResult_t sketchDecode(const void* table, scclDataType_t dtype,
                                    const SketchShape& shape, const uint8_t* bitmap,
                                    uint32_t divisor, void* out, scclDataType_t out_dtype,
                                    void* stream) const = 0;

  // For every i in a marked block: x[i] = 0 (sub null) or x[i] -= sub[i] (sub of x's type);
  // elements of unmarked blocks are unchanged.
  virtual scclResult_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                                          const uint8_t* bitmap, const void* sub,
                                          void* stream) const = 0;

  // *elements = the elements of the blocks marked in `bitmap` (ceil(count / block) bytes), in
  // the kernels' memory: a rank's count in the device-resident S2 call's header.
  virtual scclResult_t markedElements(const uint8_t* bitmap, size_t count, size_t block,
                                      uint64_t* elements, void* stream) const = 0;

  // The device-resident S2 call's plan (kernels/shared/sketch_plan.h): over the all-reduced
  // union (ceil(count / block) bytes), its marked elements and its first byte other than 0 or 1,
  // then finishSketchPlan with the nranks headers (kSketchHeaderWords words each) into plan
  // (sketchPlanWords(nranks) words, its scratch included). Every array in the kernels' memory.
  virtual scclResult_t planSketch(const uint64_t* headers, const GatherPlanParams& params,
                                  size_t count, size_t block, const uint8_t* union_bitmap,
                                  uint64_t* plan, void* stream) const = 0;

  // --- The device-resident gather call (algorithms/resident_gather.cc). Counts, plans and
  // faults stay in the kernels' memory and nothing here waits for the stream, so a call reads
  // back only its plan. ---

  // idx[0, n) = the indices i of [begin, end) with !(|x_i| < threshold), ascending, where the
  // caller knows that exactly n qualify (the plan's count, from this data's bins); idx[n, padded)
  // = -1 (the padding of the index all-gather). n <= padded.
  virtual scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin,
                                         size_t end, double threshold, size_t n, int64_t* idx,
                                         size_t padded, void* stream) const = 0;

  // The same selection from the fused pass's candidates (AccumulateSelectArgs: cand_idx ascending,
  // cand_val their values in acc's type, ncand of them, all at or above the pass's floor, which
  // lies at or below threshold): idx[0, n) = the candidates' indices with
  // !(|value| < threshold), ascending; idx[n, padded) = -1. The caller knows exactly n qualify
  // (the plan's count); the range is not read again.
  virtual scclResult_t selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                              scclDataType_t dtype, size_t ncand, double threshold,
                                              size_t n, int64_t* idx, size_t padded,
                                              void* stream) const = 0;

  // The selection of a count the host does not know (the union call's speculative slot):
  // idx[0, min(*count, capacity)) = the ascending indices i of [begin, end) with
  // !(|x_i| < threshold), idx[min(*count, capacity), capacity) = -1, *count (kernels' memory) =
  // how many qualify, also past the capacity (the plan compares it with the capacity).
  virtual scclResult_t selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin,
                                          size_t end, double threshold, size_t capacity,
                                          int64_t* idx, uint64_t* count, void* stream) const = 0;
  // The same with the threshold's pattern (thresholdBits of the accumulator type) read from
  // *threshold_bits in the kernels' memory, where the kernels chose it (countCheckWindow). The
  // accumulator types.
  virtual scclResult_t selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin,
                                            size_t end, const uint64_t* threshold_bits,
                                            size_t capacity, int64_t* idx, uint64_t* count,
                                            void* stream) const = 0;

  // selectAboveCounted's answer from the fused pass's candidates of the range (cand_idx
  // ascending, cand_val their values in dtype, ncand of them, all at or above the pass's floor,
  // which lies at or below threshold): the same idx and *count; the range is not read.
  virtual scclResult_t selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                               scclDataType_t dtype, size_t ncand, double threshold,
                                               size_t capacity, int64_t* idx, uint64_t* count,
                                               void* stream) const = 0;

  // idx[0, k) = the exact top-k of |x| over [begin, end), ascending indices: every entry above the
  // k-th largest magnitude and, among those equal to it, the lowest indices (the host reduction's
  // top-k trim); 1 <= k <= end - begin; *kth_bits (kernels' memory) = the k-th largest magnitude
  // pattern (the smallest selected). For the accumulator types; NaN ranks above +inf as in
  // selectAbove. Nothing comes back to the host.
  virtual scclResult_t selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  size_t k, int64_t* idx, uint64_t* kth_bits,
                                  void* stream) const = 0;

  // selectTopK's answer over a range from the fused pass's candidates of it (cand_idx ascending,
  // cand_val their values in dtype, ncand of them), where the caller knows that every entry of
  // the range left out is smaller than the k-th largest candidate (the candidates are every entry
  // at or above a floor, and at least k of them qualified): idx[0, k) and *kth_bits as selectTopK
  // writes them, ties at the k-th value to the lowest indices; 1 <= k <= ncand. The range is not
  // read.
  virtual scclResult_t selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                            scclDataType_t dtype, size_t ncand, size_t k,
                                            int64_t* idx, uint64_t* kth_bits,
                                            void* stream) const = 0;

  // plan = planGatherCall(records, params, ranges, *fault) (kernels/shared/gather_plan.h), every
  // array in the kernels' memory.
  virtual scclResult_t planGather(const uint64_t* records, const GatherPlanParams& params,
                                  const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                                  void* stream) const = 0;

  // The two-step exchange's plan (kernels/shared/gather_plan.h): planEdgeFromSums (edge_words: 2
  // words; own_count: this rank's header word) and planFromHeaders, every array in the kernels'
  // memory.
  virtual scclResult_t planEdge(const uint64_t* summed, const uint64_t* own,
                                const GatherPlanParams& params, uint64_t* edge_words,
                                uint64_t* own_count, void* stream) const = 0;
  virtual scclResult_t planHeaders(const uint64_t* headers, const GatherPlanParams& params,
                                   const uint64_t* ranges, const uint32_t* fault,
                                   const uint64_t* edge_words, uint64_t* plan,
                                   void* stream) const = 0;

  // The global index list of an exclusive search space from the padded index all-gather
  // (nranks slices of `slot` entries, of ranks first_rank, first_rank + 1, ...) and the plan's
  // counts and offsets: global[offset_r + j] = slice_r[j] for j < count_r where sliceEntryValid
  // holds; an entry that fails writes 0 (an index every kernel may read) and lowers *fault to r
  // (kNoIndexFault: none). A sole selector's broadcast is one slice with first_rank = its rank.
  virtual scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                                size_t first_rank, const uint64_t* plan,
                                                const uint64_t* ranges, int64_t* global,
                                                uint32_t* fault, void* stream) const = 0;

  // writeDense(), unless *fault != kNoIndexFault (dst is then left untouched).
  virtual scclResult_t writeDenseUnlessFault(void* dst, scclDataType_t dst_dtype, size_t count,
                                             const int64_t* idx, const void* vals,
                                             scclDataType_t val_dtype, size_t n, double scale,
                                             const uint32_t* fault, void* stream) const = 0;

  // When *fault != kNoIndexFault: dst[0, bytes) = src[0, bytes) (the residual put back after a
  // call whose peers' indices failed) and *published = *fault (published may be null: memory the
  // host reads without waiting, mapped page-locked memory on CUDA); else nothing.
  virtual scclResult_t copyOnFault(void* dst, const void* src, size_t bytes,
                                   const uint32_t* fault, uint32_t* published,
                                   void* stream) const = 0;

  // The plan of the device-resident union call (kernels/shared/union_plan.h): plan =
  // planUnionHeaders over the nranks slots (unionSlotWords(capacity) words each); when it passes,
  // global[0, u) = the union of every rank's first `count` indices, sorted, without duplicates,
  // every slice checked first (sliceEntryValid against the rank's range in `ranges`), and
  // finishUnionPlan(u, the lowest failing rank). global holds nranks * capacity entries; every
  // array in the kernels' memory.
  virtual scclResult_t planUnion(const uint64_t* slots, const GatherPlanParams& params,
                                 size_t capacity, const uint64_t* ranges, int64_t* global,
                                 uint64_t* plan, void* stream) const = 0;

  // --- The device-resident sync_free call (algorithms/resident_sync_free.cc): every count,
  // threshold and decision is a word of SyncFreeWords (kernels/shared/sync_free_call.h), so a
  // call reads nothing back. Slots are syncFreeSlotWords(capacity) int64 words: k, non-finite
  // count, fingerprint, call number, then k ascending indices padded with -1. ---

  // The call's start: w.ranges from w.partitions at call *w.sequence (syncFreeCallRanges),
  // *w.nonfinite = 0, *w.bad = 0.
  virtual scclResult_t syncFreeBeginCall(const SyncFreeWords& w, void* stream) const = 0;

  // The capped selection into `slot`: the entries of [bounds[0], bounds[1]) (kernels' memory, at
  // most `items` long) with !(|acc| < *threshold), the `keep` largest kept (1 <= keep <=
  // capacity; ties at the cut-off: lowest indices, as trimAlignedSelection), ascending, padded
  // with -1 to `capacity` indices, and the header (k, *nonfinite or 0 when null, fingerprint,
  // *sequence). Accumulator types. With candidates (idx not null): the fused pass's selection of
  // the same range at the same threshold; the selection reads them instead of the range when
  // *count <= room, else scans the range (an overflowed candidate buffer).
  virtual scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype,
                                      const uint64_t* bounds, size_t items,
                                      const SyncFreeCandidates& candidates, const double* threshold,
                                      size_t keep, size_t capacity, const uint64_t* nonfinite,
                                      uint64_t fingerprint, const uint64_t* sequence, int64_t* slot,
                                      void* stream) const = 0;

  // *w.status = syncFreeDecide over the n gathered slots (an earlier fault in *w.fault fails the
  // call); a new fault goes to *w.fault, made visible to the host.
  virtual scclResult_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w,
                                     uint64_t fingerprint, bool nonfinite_is_error,
                                     void* stream) const = 0;

  // values[r * capacity + j] = acc[index j of rank r's slot], 0 for padding and for an index that
  // fails its check (outside rank r's range in w.ranges, not above the previous one, or past a
  // count above the capacity), which sets *w.bad; then syncFreeSettle into *w.status / *w.fault.
  virtual scclResult_t syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                           const int64_t* gathered, const SyncFreeWords& w,
                                           void* values, void* stream) const = 0;

  // The output: when *w.status completes, recv = 0 and recv[index] = value (divided by divisor
  // unless 1, as divideByRanks; converted as scatterValues) and acc[index] = 0 at every checked
  // index of every slot; else recv = the NaN of recv_dtype (the host's pattern) and acc is not
  // touched.
  virtual scclResult_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count,
                                     void* acc, scclDataType_t acc_dtype,
                                     const int64_t* gathered, const SyncFreeWords& w,
                                     const void* values, uint32_t divisor,
                                     void* stream) const = 0;

  // A call whose plan the host does not read (S2 "topk" and CLT-k on device buffers): *a.status =
  // settlePlanStatus (kernels/shared/plan_settle.h) of the plan, the index check, the policy and
  // *a.fault; a fault raised there sets *a.fault unless it is set already (the first one sticks);
  // settlePlanTotals into *a.totals; recv = NaN of recv_dtype (the host reduction's pattern)
  // unless the call completes, else recv is left as it is.
  virtual scclResult_t settlePlan(const PlanSettleArgs& a, void* stream) const = 0;

  // dst[0, 4) = the four words, in stream order; the words travel with the launch, so no host
  // buffer that a later call could overwrite before the copy ran is involved.
  virtual scclResult_t writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                                  void* stream) const = 0;

  // dst[0, bytes) = src[0, bytes) when (*status == kSyncFreeCompletes) == when_complete (bytes a
  // multiple of 4): the residual committed (fixed buffers) or put back (swapped buffers).
  virtual scclResult_t copyByStatus(void* dst, const void* src, size_t bytes,
                                    const uint32_t* status, bool when_complete,
                                    void* stream) const = 0;

  // syncFreeEndCall (kernels/shared/sync_free_call.h) with *w.status; rule and rebalance may be
  // null (host memory, copied into the launch).
  virtual scclResult_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w,
                                       uint64_t k_target, const ScalingRule* rule,
                                       const ExDynaRebalanceRule* rebalance,
                                       void* stream) const = 0;
};

// The CPU backend, with the instruction set chosen once at first use (SCCL_CPU_ISA caps it).
const KernelBackend& cpuKernels();

}  // namespace sccl
