// The fake device's kernels of the device-resident calls (kernels.h: the resident gather, union
// and sync_free calls), each a queued launch of the CPU backend's kernel on the read-write alias
// of its arguments (support/fake_device.h). The other kernels are in fake_device.cc.
#include "support/fake_device.h"

namespace sccl_test {

using sccl::cpuKernels;

scclResult_t FakeKernels::selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin,
                                            size_t end, double threshold, size_t n, int64_t* idx,
                                            size_t padded, void*) const {
  const void* xv = d_.view(x);
  int64_t* i = d_.at(idx);
  launch("selectAbovePadded", [=] {
    return cpuKernels().selectAbovePadded(xv, dtype, begin, end, threshold, n, i, padded, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                                 scclDataType_t dtype, size_t ncand,
                                                 double threshold, size_t n, int64_t* idx,
                                                 size_t padded, void*) const {
  const int64_t* ci = d_.at(cand_idx);
  const void* cv = d_.view(cand_val);
  int64_t* i = d_.at(idx);
  launch("selectCandidatesPadded", [=] {
    return cpuKernels().selectCandidatesPadded(ci, cv, dtype, ncand, threshold, n, i, padded,
                                               nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::markedElements(const uint8_t* bitmap, size_t count, size_t block,
                                         uint64_t* elements, void*) const {
  const uint8_t* bv = d_.at(bitmap);
  uint64_t* ev = d_.at(elements);
  launch("markedElements",
         [=] { return cpuKernels().markedElements(bv, count, block, ev, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::planSketch(const uint64_t* headers, const sccl::GatherPlanParams& params,
                                     size_t count, size_t block, const uint8_t* union_bitmap,
                                     uint64_t* plan, void*) const {
  const uint64_t* rv = d_.at(headers);
  const uint8_t* uv = d_.at(union_bitmap);
  uint64_t* pv = d_.at(plan);
  const sccl::GatherPlanParams p = params;
  launch("planSketch",
         [=] { return cpuKernels().planSketch(rv, p, count, block, uv, pv, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin,
                                             size_t end, double threshold, size_t capacity,
                                             int64_t* idx, uint64_t* count, void*) const {
  const void* xv = d_.view(x);
  int64_t* i = d_.at(idx);
  uint64_t* c = d_.at(count);
  launch("selectAboveCounted", [=] {
    return cpuKernels().selectAboveCounted(xv, dtype, begin, end, threshold, capacity, i, c,
                                           nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin,
                                               size_t end, const uint64_t* threshold_bits,
                                               size_t capacity, int64_t* idx, uint64_t* count,
                                               void*) const {
  const void* xv = d_.view(x);
  const uint64_t* t = d_.at(threshold_bits);
  int64_t* i = d_.at(idx);
  uint64_t* c = d_.at(count);
  launch("selectAboveCountedAt", [=] {
    return cpuKernels().selectAboveCountedAt(xv, dtype, begin, end, t, capacity, i, c, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::planGather(const uint64_t* records, const sccl::GatherPlanParams& params,
                                     const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                                     void*) const {
  const uint64_t* rv = d_.at(records);
  const uint64_t* gv = d_.at(ranges);
  const uint32_t* fv = d_.at(fault);
  uint64_t* pv = d_.at(plan);
  const sccl::GatherPlanParams p = params;
  launch("planGather", [=] { return cpuKernels().planGather(rv, p, gv, fv, pv, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::assembleExclusiveIndices(const int64_t* gathered, size_t nranks,
                                                   size_t slot, size_t first_rank,
                                                   const uint64_t* plan, const uint64_t* ranges,
                                                   int64_t* global, uint32_t* fault, void*) const {
  const int64_t* g = d_.at(gathered);
  const uint64_t* p = d_.at(plan);
  const uint64_t* r = d_.at(ranges);
  int64_t* out = d_.at(global);
  uint32_t* f = d_.at(fault);
  launch("assembleExclusiveIndices", [=] {
    return cpuKernels().assembleExclusiveIndices(g, nranks, slot, first_rank, p, r, out, f,
                                                 nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::planEdge(const uint64_t* summed, const uint64_t* own,
                                   const sccl::GatherPlanParams& params, uint64_t* edge_words,
                                   uint64_t* own_count, void*) const {
  const uint64_t* s = d_.at(summed);
  const uint64_t* o = d_.at(own);
  uint64_t* e = d_.at(edge_words);
  uint64_t* c = d_.at(own_count);
  const sccl::GatherPlanParams p = params;
  launch("planEdge", [=] { return cpuKernels().planEdge(s, o, p, e, c, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::planHeaders(const uint64_t* headers, const sccl::GatherPlanParams& params,
                                      const uint64_t* ranges, const uint32_t* fault,
                                      const uint64_t* edge_words, uint64_t* plan, void*) const {
  const uint64_t* h = d_.at(headers);
  const uint64_t* r = d_.at(ranges);
  const uint32_t* f = d_.at(fault);
  const uint64_t* e = d_.at(edge_words);
  uint64_t* pl = d_.at(plan);
  const sccl::GatherPlanParams p = params;
  launch("planHeaders", [=] { return cpuKernels().planHeaders(h, p, r, f, e, pl, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                     size_t k, int64_t* idx, uint64_t* kth_bits, void*) const {
  const void* xv = d_.view(x);
  int64_t* i = d_.at(idx);
  uint64_t* kb = d_.at(kth_bits);
  launch("selectTopK",
         [=] { return cpuKernels().selectTopK(xv, dtype, begin, end, k, i, kb, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                                  scclDataType_t dtype, size_t ncand,
                                                  double threshold, size_t capacity, int64_t* idx,
                                                  uint64_t* count, void*) const {
  const int64_t* ci = d_.at(cand_idx);
  const void* cv = d_.view(cand_val);
  int64_t* i = d_.at(idx);
  uint64_t* c = d_.at(count);
  launch("selectCandidatesCounted", [=] {
    return cpuKernels().selectCandidatesCounted(ci, cv, dtype, ncand, threshold, capacity, i, c,
                                                nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                               scclDataType_t dtype, size_t ncand, size_t k,
                                               int64_t* idx, uint64_t* kth_bits, void*) const {
  const int64_t* ci = d_.at(cand_idx);
  const void* cv = d_.view(cand_val);
  int64_t* i = d_.at(idx);
  uint64_t* kb = d_.at(kth_bits);
  launch("selectTopKCandidates", [=] {
    return cpuKernels().selectTopKCandidates(ci, cv, dtype, ncand, k, i, kb, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::writeDenseUnlessFault(void* dst, scclDataType_t dst_dtype, size_t count,
                                                const int64_t* idx, const void* vals,
                                                scclDataType_t val_dtype, size_t n, double scale,
                                                const uint32_t* fault, void*) const {
  void* dv = d_.view(dst);
  const int64_t* i = d_.at(idx);
  const void* v = d_.view(vals);
  const uint32_t* f = d_.at(fault);
  launch("writeDenseUnlessFault", [=] {
    return cpuKernels().writeDenseUnlessFault(dv, dst_dtype, count, i, v, val_dtype, n, scale, f,
                                              nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::copyOnFault(void* dst, const void* src, size_t bytes,
                                      const uint32_t* fault, uint32_t* published, void*) const {
  void* dv = d_.view(dst);
  const void* s = d_.view(src);
  const uint32_t* f = d_.at(fault);
  uint32_t* p = d_.at(published);
  launch("copyOnFault", [=] { return cpuKernels().copyOnFault(dv, s, bytes, f, p, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::planUnion(const uint64_t* slots, const sccl::GatherPlanParams& params,
                                    size_t capacity, const uint64_t* ranges, int64_t* global,
                                    uint64_t* plan, void*) const {
  const uint64_t* s = d_.at(slots);
  const uint64_t* r = d_.at(ranges);
  int64_t* g = d_.at(global);
  uint64_t* p = d_.at(plan);
  launch("planUnion",
         [=] { return cpuKernels().planUnion(s, params, capacity, r, g, p, nullptr); });
  return scclSuccess;
}

sccl::SyncFreeWords FakeKernels::view(const sccl::SyncFreeWords& w) const {
  sccl::SyncFreeWords v = w;
  v.ranges = d_.at(w.ranges);
  v.partitions = d_.at(w.partitions);
  v.exdyna = d_.at(w.exdyna);
  v.threshold = d_.at(w.threshold);
  v.nonfinite = d_.at(w.nonfinite);
  v.bad = d_.at(w.bad);
  v.sequence = d_.at(w.sequence);
  v.status = d_.at(w.status);
  v.totals = d_.at(w.totals);
  v.fault = d_.at(w.fault);
  return v;
}

scclResult_t FakeKernels::syncFreeBeginCall(const sccl::SyncFreeWords& w, void*) const {
  const sccl::SyncFreeWords v = view(w);
  launch("syncFreeBeginCall", [=] { return cpuKernels().syncFreeBeginCall(v, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::syncFreeSelect(const void* acc, scclDataType_t acc_dtype,
                                         const uint64_t* bounds, size_t items,
                                         const sccl::SyncFreeCandidates& candidates,
                                         const double* threshold, size_t keep, size_t capacity,
                                         const uint64_t* nonfinite, uint64_t fingerprint,
                                         const uint64_t* sequence, int64_t* slot, void*) const {
  sccl::SyncFreeCandidates c = candidates;
  c.idx = d_.at(candidates.idx);
  c.count = d_.at(candidates.count);
  const void* a = d_.view(acc);
  const uint64_t* b = d_.at(bounds);
  const double* t = d_.at(threshold);
  const uint64_t* nf = d_.at(nonfinite);
  const uint64_t* seq = d_.at(sequence);
  int64_t* s = d_.at(slot);
  launch("syncFreeSelect", [=] {
    return cpuKernels().syncFreeSelect(a, acc_dtype, b, items, c, t, keep, capacity, nf,
                                       fingerprint, seq, s, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::syncFreeCheck(const int64_t* gathered, const sccl::SyncFreeWords& w,
                                        uint64_t fingerprint, bool nonfinite_is_error,
                                        void*) const {
  const int64_t* g = d_.at(gathered);
  const sccl::SyncFreeWords v = view(w);
  launch("syncFreeCheck", [=] {
    return cpuKernels().syncFreeCheck(g, v, fingerprint, nonfinite_is_error, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype,
                                              const int64_t* gathered,
                                              const sccl::SyncFreeWords& w, void* values,
                                              void*) const {
  const void* a = d_.view(acc);
  const int64_t* g = d_.at(gathered);
  const sccl::SyncFreeWords v = view(w);
  void* out = d_.view(values);
  launch("syncFreeGatherSlots",
         [=] { return cpuKernels().syncFreeGatherSlots(a, acc_dtype, g, v, out, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count,
                                        void* acc, scclDataType_t acc_dtype,
                                        const int64_t* gathered, const sccl::SyncFreeWords& w,
                                        const void* values, uint32_t divisor, void*) const {
  void* r = d_.view(recv);
  void* a = d_.view(acc);
  const int64_t* g = d_.at(gathered);
  const sccl::SyncFreeWords v = view(w);
  const void* vals = d_.view(values);
  launch("syncFreeWrite", [=] {
    return cpuKernels().syncFreeWrite(r, recv_dtype, count, a, acc_dtype, g, v, vals, divisor,
                                      nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::settlePlan(const sccl::PlanSettleArgs& a, void*) const {
  sccl::PlanSettleArgs v = a;
  v.plan = d_.at(a.plan);
  v.index_fault = d_.at(a.index_fault);
  v.fault = d_.at(a.fault);
  v.status = d_.at(a.status);
  v.totals = d_.at(a.totals);
  v.last_completed = d_.at(a.last_completed);
  v.recv = d_.view(a.recv);
  launch("settlePlan", [=] { return cpuKernels().settlePlan(v, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::writeWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2,
                                     uint64_t w3, void*) const {
  uint64_t* d = d_.at(dst);
  launch("writeWords", [=] { return cpuKernels().writeWords(d, w0, w1, w2, w3, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::copyByStatus(void* dst, const void* src, size_t bytes,
                                       const uint32_t* status, bool when_complete, void*) const {
  void* dv = d_.view(dst);
  const void* s = d_.view(src);
  const uint32_t* st = d_.at(status);
  launch("copyByStatus",
         [=] { return cpuKernels().copyByStatus(dv, s, bytes, st, when_complete, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::syncFreeEndCall(const int64_t* gathered, const sccl::SyncFreeWords& w,
                                          uint64_t k_target, const sccl::ScalingRule* rule,
                                          const sccl::ExDynaRebalanceRule* rebalance,
                                          void*) const {
  const int64_t* g = d_.at(gathered);
  const sccl::SyncFreeWords v = view(w);
  // Copied into the launch, as CUDA copies a kernel's arguments.
  const bool has_rule = rule != nullptr, has_rebalance = rebalance != nullptr;
  const sccl::ScalingRule r = has_rule ? *rule : sccl::ScalingRule{};
  const sccl::ExDynaRebalanceRule b = has_rebalance ? *rebalance : sccl::ExDynaRebalanceRule{};
  launch("syncFreeEndCall", [=] {
    return cpuKernels().syncFreeEndCall(g, v, k_target, has_rule ? &r : nullptr,
                                        has_rebalance ? &b : nullptr, nullptr);
  });
  return scclSuccess;
}

}  // namespace sccl_test
