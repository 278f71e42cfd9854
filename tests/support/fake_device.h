// A fake GPU for the tests of the device paths on machines without one (the CPU kernels do the
// work). What it catches:
//  - host code touching device memory: device buffers are addresses in a no-access mapping of an
//    arena (one memfd mapped twice); the kernels run on the read-write alias of the same pages, so
//    any host access from the library faults at once;
//  - a read of a copy that was not waited for: work (kernels, copies, collectives on the stream)
//    is queued and runs only at wait(); a read-back's host buffer holds poison until then;
//  - waits and allocations while a graph is being captured (capture mode records them);
//  - how often a call launches, copies (each way, count and bytes) and waits: per-call counters.
// Kernels whose result the old interface returns in host memory (selectAbove's count,
// kthLargestAbs, absMoments, markTopBlocks' cut-off, accumulateSelect's candidate count) count a
// read-back and a wait, as they synchronise on the CUDA backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/stream_exchange.h"
#include "kernels/device_staging.h"
#include "kernels/kernels.h"

namespace sccl_test {

using DeviceCounters = sccl::DeviceStaging::Counters;

class FakeDevice {
 public:
  explicit FakeDevice(size_t arena_bytes = size_t(256) << 20);
  ~FakeDevice();
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;

  // Device memory (no host access), 256-byte aligned, filled with 0xA5; never freed (the arena is
  // reserved address space, pages are only used when touched).
  void* allocate(size_t bytes);
  bool isDevice(const void* p) const;
  // The read-write alias of a device address (what a kernel sees); other pointers unchanged.
  void* view(const void* p) const;
  template <typename T>
  T* at(T* p) const {
    return static_cast<T*>(view(p));
  }

  // The stream: work runs in order at wait(), never before.
  void enqueue(std::function<void()> work);
  void wait();  // counted; recorded as a violation while capturing
  void beginCapture() { capturing_ = true; }
  void endCapture() { capturing_ = false; }
  bool capturing() const { return capturing_; }
  void violation(const std::string& what) { violations.push_back(what); }

  DeviceCounters counters;
  std::vector<std::string> violations;  // waits or allocations while capturing, failed work

 private:
  int fd_ = -1;
  size_t bytes_ = 0;
  size_t used_ = 0;
  char* device_ = nullptr;  // PROT_NONE
  char* host_ = nullptr;    // PROT_READ | PROT_WRITE, the same pages
  bool capturing_ = false;
  std::vector<std::function<void()>> queue_;
};

// The kernel interface on the fake: each kernel is a launch, queued.
class FakeKernels final : public sccl::KernelBackend {
 public:
  explicit FakeKernels(FakeDevice& device) : d_(device) {}
  const char* name() const override { return "fake-device"; }

  scclResult_t accumulate(void* acc, const void* residual, scclDataType_t acc_dtype,
                          const void* grad, scclDataType_t grad_dtype, size_t count,
                          uint64_t* nonfinite, void* stream) const override;
  scclResult_t accumulateSelect(const sccl::AccumulateSelectArgs& args,
                                void* stream) const override;
  scclResult_t selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                           double threshold, int64_t* idx, void* val, size_t capacity,
                           size_t* nselected, void* stream) const override;
  scclResult_t gather(const void* src, scclDataType_t dtype, const int64_t* idx, size_t n,
                      void* out, void* stream) const override;
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
                          double floor, bool want_log, sccl::AbsMoments* out,
                          void* stream) const override;
  scclResult_t absBitHistogram(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                               uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts,
                               void* stream) const override;
  scclResult_t countCheckWindow(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                const sccl::CountCheckWindow& w, uint64_t* counts, uint64_t* check,
                                uint64_t* threshold_bits, void* stream) const override;
  scclResult_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                                 double* sq, void* stream) const override;
  scclResult_t markTopBlocks(const double* sq, size_t blocks, size_t max_blocks, uint8_t* marks,
                             double* cutoff_sq, void* stream) const override;
  scclResult_t markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count, size_t block,
                                 uint8_t* bitmap, void* stream) const override;
  scclResult_t sketchEncode(const void* x, scclDataType_t dtype, const sccl::SketchShape& shape,
                            const uint8_t* bitmap, void* table, size_t listed_bound,
                            void* stream) const override;
  scclResult_t sketchDecode(const void* table, scclDataType_t dtype, const sccl::SketchShape& shape,
                            const uint8_t* bitmap, uint32_t divisor, void* out,
                            scclDataType_t out_dtype, void* stream) const override;
  scclResult_t updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count, size_t block,
                                  const uint8_t* bitmap, const void* sub,
                                  void* stream) const override;
  scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                 double threshold, size_t n, int64_t* idx, size_t padded,
                                 void* stream) const override;
  scclResult_t selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                      scclDataType_t dtype, size_t ncand, double threshold,
                                      size_t n, int64_t* idx, size_t padded,
                                      void* stream) const override;
  scclResult_t markedElements(const uint8_t* bitmap, size_t count, size_t block,
                              uint64_t* elements, void* stream) const override;
  scclResult_t planSketch(const uint64_t* headers, const sccl::GatherPlanParams& params,
                          size_t count, size_t block, const uint8_t* union_bitmap, uint64_t* plan,
                          void* stream) const override;
  scclResult_t selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  double threshold, size_t capacity, int64_t* idx, uint64_t* count,
                                  void* stream) const override;
  scclResult_t selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                    const uint64_t* threshold_bits, size_t capacity, int64_t* idx,
                                    uint64_t* count, void* stream) const override;
  scclResult_t planGather(const uint64_t* records, const sccl::GatherPlanParams& params,
                          const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                          void* stream) const override;
  scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                        size_t first_rank, const uint64_t* plan,
                                        const uint64_t* ranges, int64_t* global, uint32_t* fault,
                                        void* stream) const override;
  scclResult_t selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end, size_t k,
                          int64_t* idx, uint64_t* kth_bits, void* stream) const override;
  scclResult_t selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                       scclDataType_t dtype, size_t ncand, double threshold,
                                       size_t capacity, int64_t* idx, uint64_t* count,
                                       void* stream) const override;
  scclResult_t selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                    scclDataType_t dtype, size_t ncand, size_t k, int64_t* idx,
                                    uint64_t* kth_bits, void* stream) const override;
  scclResult_t planEdge(const uint64_t* summed, const uint64_t* own,
                        const sccl::GatherPlanParams& params, uint64_t* edge_words,
                        uint64_t* own_count, void* stream) const override;
  scclResult_t planHeaders(const uint64_t* headers, const sccl::GatherPlanParams& params,
                           const uint64_t* ranges, const uint32_t* fault,
                           const uint64_t* edge_words, uint64_t* plan, void* stream) const override;
  scclResult_t writeDenseUnlessFault(void* dst, scclDataType_t dst_dtype, size_t count,
                                     const int64_t* idx, const void* vals, scclDataType_t val_dtype,
                                     size_t n, double scale, const uint32_t* fault,
                                     void* stream) const override;
  scclResult_t copyOnFault(void* dst, const void* src, size_t bytes, const uint32_t* fault,
                           uint32_t* published, void* stream) const override;
  scclResult_t planUnion(const uint64_t* slots, const sccl::GatherPlanParams& params,
                         size_t capacity, const uint64_t* ranges, int64_t* global, uint64_t* plan,
                         void* stream) const override;
  scclResult_t syncFreeBeginCall(const sccl::SyncFreeWords& w, void* stream) const override;
  scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype, const uint64_t* bounds,
                              size_t items, const sccl::SyncFreeCandidates& candidates,
                              const double* threshold, size_t keep, size_t capacity,
                              const uint64_t* nonfinite, uint64_t fingerprint,
                              const uint64_t* sequence, int64_t* slot, void* stream) const override;
  scclResult_t syncFreeCheck(const int64_t* gathered, const sccl::SyncFreeWords& w,
                             uint64_t fingerprint, bool nonfinite_is_error,
                             void* stream) const override;
  scclResult_t syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                   const int64_t* gathered, const sccl::SyncFreeWords& w,
                                   void* values, void* stream) const override;
  scclResult_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                             scclDataType_t acc_dtype, const int64_t* gathered,
                             const sccl::SyncFreeWords& w, const void* values, uint32_t divisor,
                             void* stream) const override;
  scclResult_t settlePlan(const sccl::PlanSettleArgs& a, void* stream) const override;
  scclResult_t writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                          void* stream) const override;
  scclResult_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                            bool when_complete, void* stream) const override;
  scclResult_t syncFreeEndCall(const int64_t* gathered, const sccl::SyncFreeWords& w,
                               uint64_t k_target, const sccl::ScalingRule* rule,
                               const sccl::ExDynaRebalanceRule* rebalance,
                               void* stream) const override;

 private:
  // The words as a kernel sees them (the read-write alias).
  sccl::SyncFreeWords view(const sccl::SyncFreeWords& w) const;
  // Queues `work` (a launch); its failure becomes a violation.
  void launch(const char* what, std::function<scclResult_t()> work) const;
  // A kernel whose result is host memory: runs now, after a counted wait.
  scclResult_t synchronous(size_t result_bytes, const std::function<scclResult_t()>& work) const;
  FakeDevice& d_;
};

// DeviceStaging on the fake: device buffers from the arena, host buffers poisoned until the
// read-back into them is waited for, uploads taken from the host when enqueued (as CUDA's
// copies from pageable memory).
class FakeStaging final : public sccl::DeviceStaging {
 public:
  explicit FakeStaging(FakeDevice& device) : d_(device) {}
  scclResult_t buffer(Buffer which, size_t bytes, void** out) override;
  scclResult_t hostBuffer(HostBuffer which, size_t bytes, void** out) override;
  scclResult_t toHost(void* host, const void* device, size_t bytes) override;
  scclResult_t readBack(void* host, const void* device, size_t bytes) override;
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override;
  scclResult_t copyOnDevice(void* dst, const void* src, size_t bytes) override;
  scclResult_t synchronize() override;
  scclResult_t fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) override;
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override;
  Counters counters() const override { return d_.counters; }

 private:
  FakeDevice& d_;
  struct Buf {
    void* p = nullptr;
    size_t bytes = 0;
  };
  Buf device_[kBufferCount];
  std::vector<unsigned char> host_[kHostBufferCount];
};

// Collectives on the fake's stream, as NCCL's are on a CUDA stream: queued, run at the wait on
// the communicator's host transport. tamper (optional) edits what the n-th collective of a call
// received, on every rank alike (a hostile peer's data).
class FakeStreamExchange final : public sccl::StreamExchange {
 public:
  explicit FakeStreamExchange(FakeDevice& device) : d_(device) {}
  scclResult_t allGather(sccl::SparseCall& call, const void* send, void* recv,
                         size_t bytes_per_rank) override;
  scclResult_t allReduceSum(sccl::SparseCall& call, const void* send, void* recv, size_t count,
                            scclDataType_t dtype) override;
  scclResult_t allReduceMaxBytes(sccl::SparseCall& call, const void* send, void* recv,
                                 size_t bytes) override;
  bool twoStep(int) const override { return two_step; }
  bool two_step = false;  // the tests choose the exchange's form
  scclResult_t broadcast(sccl::SparseCall& call, void* buf, size_t bytes, int root) override;
  // Called with (collective number in this exchange's life, received bytes' host view, bytes).
  std::function<void(size_t, void*, size_t)> tamper;
  size_t collectives = 0;

 private:
  FakeDevice& d_;
};

// Device buffers over the host transport for the staged reductions (what the pinned staging
// transport does with the CUDA runtime): installs a PinnedStagingTransport whose copier reads and
// writes the fake's memory, each copy counted and complete when it returns.
void installFakeDeviceTransport(scclComm_t comm, FakeDevice& device);

}  // namespace sccl_test
