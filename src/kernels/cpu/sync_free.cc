// The CPU backend's kernels of the device-resident sync_free call (kernels.h, "The
// device-resident sync_free call"): the decisions are kernels/shared/sync_free_call.h's, which the
// CUDA backend runs too; the capped selection is selectAbove's (or the accumulating pass's
// candidates, which are the same entries) followed by the trim to the `keep` largest (every entry
// above the keep-th largest magnitude, then the lowest indices among those equal to it); the
// output is scatterValues' with scclAvg divided as divideByRanks.
#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/call_outcome.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dtype_checks.h"
#include "kernels/shared/canonical_nan.h"
#include "kernels/shared/half.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cpu {
namespace {

uint64_t magnitudeOf(const void* x, scclDataType_t dtype, size_t i) {
  if (dtype == scclFloat64) return magnitudeBits(static_cast<const uint64_t*>(x)[i]);
  return magnitudeBits(static_cast<const uint32_t*>(x)[i]);
}

// Index j of rank r's slot, or -1 (padding, or a failed check, which sets *bad).
int64_t checkedIndex(const int64_t* gathered, const uint64_t* ranges, size_t r, size_t capacity,
                     size_t j, uint32_t* bad) {
  const int64_t* slot = gathered + r * syncFreeSlotWords(capacity);
  const uint64_t k = uint64_t(slot[0]);
  if (k > capacity) {
    if (bad != nullptr) *bad = 1;
    return -1;
  }
  if (j >= k) return -1;
  const int64_t i = slot[kSlotHeaderWords + j];
  if (i < int64_t(ranges[2 * r]) || i >= int64_t(ranges[2 * r + 1]) ||
      (j > 0 && i <= slot[kSlotHeaderWords + j - 1])) {
    if (bad != nullptr) *bad = 1;
    return -1;
  }
  return i;
}

// Whether every one of the k <= capacity indices of rank r's slot passes checkedIndex's check
// (inside the rank's range, strictly ascending): one sequential pass, no per-entry lookups.
bool checkedSlot(const int64_t* slot, const uint64_t* ranges, size_t r) {
  const uint64_t k = uint64_t(slot[0]);
  const int64_t* idx = slot + kSlotHeaderWords;
  const int64_t begin = int64_t(ranges[2 * r]), end = int64_t(ranges[2 * r + 1]);
  int64_t previous = begin - 1;
  for (uint64_t j = 0; j < k; ++j) {
    const int64_t i = idx[j];
    if (i <= previous || i >= end) return false;
    previous = i;
  }
  return true;
}

}  // namespace

scclResult_t syncFreeBeginCall(const SyncFreeWords& w) {
  syncFreeCallRanges(w.partitions, w.nranks, *w.sequence, w.ranges);
  *w.nonfinite = 0;
  *w.bad = 0;
  return scclSuccess;
}

scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype, const uint64_t* bounds,
                            const SyncFreeCandidates& candidates, const double* threshold,
                            size_t keep, size_t capacity, const uint64_t* nonfinite,
                            uint64_t fingerprint, const uint64_t* sequence, int64_t* slot) {
  SCCL_CHECK(requireAccType(acc_dtype, "syncFreeSelect"));
  SCCL_REQUIRE_ARG(keep >= 1 && keep <= capacity, "syncFreeSelect: keep %zu of capacity %zu", keep,
                   capacity);
  SCCL_REQUIRE_ARG(candidates.idx == nullptr || candidates.count != nullptr,
                   "syncFreeSelect: candidates without their count");
  const size_t begin = size_t(bounds[0]), end = size_t(bounds[1]);
  // Scratch kept per thread: a training loop's steady state allocates nothing.
  thread_local std::vector<int64_t> scanned;
  thread_local std::vector<uint64_t> bits, order;
  const int64_t* found = nullptr;
  size_t n = 0;
  if (candidates.idx != nullptr && *candidates.count <= candidates.room) {
    found = candidates.idx;  // the pass's selection of this range at this threshold
    n = *candidates.count;
  } else if (end > begin) {
    const size_t want = std::min(end - begin, std::max<size_t>(4096, 2 * keep));
    if (scanned.size() < want) scanned.resize(want);
    SCCL_CHECK(selectAbove(acc, acc_dtype, begin, end, *threshold, scanned.data(), nullptr,
                           scanned.size(), &n));
    if (n > scanned.size()) {
      scanned.resize(n);
      SCCL_CHECK(
          selectAbove(acc, acc_dtype, begin, end, *threshold, scanned.data(), nullptr, n, &n));
    }
    found = scanned.data();
  }
  int64_t* out = slot + kSlotHeaderWords;
  size_t kept = 0;
  if (n <= keep) {
    std::copy_n(found, n, out);
    kept = n;
  } else {
    bits.resize(n);
    for (size_t j = 0; j < n; ++j) bits[j] = magnitudeOf(acc, acc_dtype, size_t(found[j]));
    order.assign(bits.begin(), bits.end());
    std::nth_element(order.begin(), order.begin() + (keep - 1), order.end(),
                     std::greater<uint64_t>());
    const uint64_t cut = order[keep - 1];  // the keep-th largest magnitude
    size_t above = 0;
    for (uint64_t b : bits) above += b > cut;
    size_t ties = keep - above;
    for (size_t j = 0; j < n && kept < keep; ++j) {
      if (bits[j] > cut || (bits[j] == cut && ties > 0)) {
        if (bits[j] == cut) --ties;
        out[kept++] = found[j];
      }
    }
  }
  std::fill(out + kept, out + capacity, int64_t{-1});
  slot[0] = int64_t(kept);
  slot[1] = nonfinite == nullptr ? 0 : int64_t(*nonfinite);
  slot[2] = int64_t(fingerprint);
  slot[3] = int64_t(*sequence);
  return scclSuccess;
}

scclResult_t syncFreeCheck(const int64_t* gathered, const SyncFreeWords& w, uint64_t fingerprint,
                           bool nonfinite_is_error) {
  uint64_t raise = 0;
  *w.status = syncFreeDecide(gathered, w.nranks, w.capacity, fingerprint, *w.sequence, w.ranges,
                             nonfinite_is_error, loadFault(w.fault), &raise);
  raiseFault(w.fault, raise);
  return scclSuccess;
}

scclResult_t syncFreeGatherSlots(const void* acc, scclDataType_t acc_dtype, const int64_t* gathered,
                                 const SyncFreeWords& w, void* values) {
  const size_t element = dataTypeSize(acc_dtype);
  const size_t capacity = w.capacity;
  for (size_t r = 0; r < size_t(w.nranks); ++r) {
    const int64_t* slot = gathered + r * syncFreeSlotWords(capacity);
    const uint64_t k = uint64_t(slot[0]);
    char* out = static_cast<char*>(values) + r * capacity * element;
    if (k > capacity) {  // every entry fails (checkedIndex)
      *w.bad = 1;
      std::memset(out, 0, capacity * element);
      continue;
    }
    if (checkedSlot(slot, w.ranges, r)) {
      SCCL_CHECK(gather(acc, acc_dtype, slot + kSlotHeaderWords, k, out));
    } else {
      for (size_t j = 0; j < k; ++j) {
        const int64_t i = checkedIndex(gathered, w.ranges, r, capacity, j, w.bad);
        if (i < 0) {
          std::memset(out + j * element, 0, element);
        } else {
          std::memcpy(out + j * element, static_cast<const char*>(acc) + size_t(i) * element,
                      element);
        }
      }
    }
    std::memset(out + k * element, 0, (capacity - k) * element);
  }
  uint64_t raise = 0;
  *w.status = syncFreeSettle(*w.bad, *w.status, *w.sequence, &raise);
  raiseFault(w.fault, raise);
  return scclSuccess;
}

scclResult_t syncFreeWrite(void* recv, scclDataType_t recv_dtype, size_t count, void* acc,
                           scclDataType_t acc_dtype, const int64_t* gathered,
                           const SyncFreeWords& w, const void* values, uint32_t divisor) {
  if (*w.status != kSyncFreeCompletes) {
    fillNaN(recv, recv_dtype, count);
    return scclSuccess;
  }
  SCCL_CHECK(fillZero(recv, count * dataTypeSize(recv_dtype)));
  const size_t element = dataTypeSize(acc_dtype);
  const size_t capacity = w.capacity;
  thread_local std::vector<int64_t> idx;  // scratch kept per thread, as the selection's
  thread_local std::vector<char> vals;
  if (idx.size() < capacity) idx.resize(capacity);
  if (vals.size() < capacity * element) vals.resize(capacity * element);
  for (size_t r = 0; r < size_t(w.nranks); ++r) {
    const int64_t* slot = gathered + r * syncFreeSlotWords(capacity);
    const uint64_t k = uint64_t(slot[0]);
    if (k > capacity || k == 0) continue;  // a count above the capacity: no entry passes
    const char* from = static_cast<const char*>(values) + r * capacity * element;
    // A completed call's slots passed their checks: the slot's indices and values as they are.
    const int64_t* at = slot + kSlotHeaderWords;
    const void* vals_at = from;
    size_t m = k;
    if (!checkedSlot(slot, w.ranges, r)) {
      m = 0;
      for (size_t j = 0; j < k; ++j) {
        const int64_t i = checkedIndex(gathered, w.ranges, r, capacity, j, nullptr);
        if (i < 0) continue;
        idx[m] = i;
        std::memcpy(vals.data() + m * element, from + j * element, element);
        ++m;
      }
      if (m == 0) continue;
      at = idx.data();
      vals_at = vals.data();
    }
    if (divisor != 1) {
      if (vals_at != vals.data()) std::memcpy(vals.data(), vals_at, m * element);
      SCCL_CHECK(divideByRanks(vals.data(), m, acc_dtype, int(divisor)));
      vals_at = vals.data();
    }
    SCCL_CHECK(scatterValues(recv, recv_dtype, at, vals_at, acc_dtype, m, 1.0));
    SCCL_CHECK(zeroAt(acc, acc_dtype, at, m));
  }
  return scclSuccess;
}

scclResult_t copyByStatus(void* dst, const void* src, size_t bytes, const uint32_t* status,
                          bool when_complete) {
  if ((*status == kSyncFreeCompletes) == when_complete) std::memcpy(dst, src, bytes);
  return scclSuccess;
}

scclResult_t syncFreeEndCall(const int64_t* gathered, const SyncFreeWords& w, uint64_t k_target,
                             const ScalingRule* rule, const ExDynaRebalanceRule* rebalance) {
  sccl::syncFreeEndCall(gathered, w, *w.status, k_target, rule, rebalance);
  return scclSuccess;
}

}  // namespace sccl::cpu
