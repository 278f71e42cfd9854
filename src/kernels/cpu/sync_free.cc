// The CPU backend's kernels of the device-resident sync_free call (kernels.h, "The
// device-resident sync_free call"): the decisions are kernels/shared/sync_free_call.h's, which the
// CUDA backend runs too; the capped selection is selectAbove's followed by the host reduction's
// trim (every entry above the capacity-th largest magnitude, then the lowest indices among those
// equal to it); the output is scatterValues' with scclAvg divided as divideByRanks.
#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "core/error.h"
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

// The fault word is read by the host without waiting: a release store, the first fault kept.
void raiseFault(uint64_t* fault, uint64_t word) {
  if (word == 0) return;
  uint64_t expected = 0;
  __atomic_compare_exchange_n(fault, &expected, word, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

uint64_t loadFault(const uint64_t* fault) {
  return __atomic_load_n(fault, __ATOMIC_ACQUIRE);
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

template <typename Word>
void fillWord(void* out, size_t count, Word value) {
  std::fill_n(static_cast<Word*>(out), count, value);
}

// recv = the NaN the host reduction writes for a discarded or failed call.
void fillNaN(void* recv, scclDataType_t dtype, size_t count) {
  const float nan = bitsToFloat(kCanonicalNaNFloat32);
  switch (dtype) {
    case scclFloat64: fillWord(recv, count, kCanonicalNaNFloat64); break;
    case scclFloat16: fillWord(recv, count, floatToFp16(nan)); break;
    case scclBfloat16: fillWord(recv, count, floatToBf16(nan)); break;
    default: fillWord(recv, count, kCanonicalNaNFloat32); break;
  }
}

}  // namespace

scclResult_t syncFreeBeginCall(const SyncFreeWords& w) {
  syncFreeCallRanges(w.partitions, w.nranks, *w.sequence, w.ranges);
  *w.nonfinite = 0;
  *w.bad = 0;
  return scclSuccess;
}

scclResult_t syncFreeSelect(const void* acc, scclDataType_t acc_dtype, const uint64_t* bounds,
                            const double* threshold, size_t keep, size_t capacity,
                            const uint64_t* nonfinite, uint64_t fingerprint,
                            const uint64_t* sequence, int64_t* slot) {
  SCCL_CHECK(requireAccType(acc_dtype, "syncFreeSelect"));
  SCCL_REQUIRE_ARG(keep >= 1 && keep <= capacity, "syncFreeSelect: keep %zu of capacity %zu", keep,
                   capacity);
  const size_t begin = size_t(bounds[0]), end = size_t(bounds[1]);
  std::vector<int64_t> found;
  size_t n = 0;
  if (end > begin) {
    found.resize(std::min(end - begin, std::max<size_t>(4096, 2 * keep)));
    SCCL_CHECK(selectAbove(acc, acc_dtype, begin, end, *threshold, found.data(), nullptr,
                           found.size(), &n));
    if (n > found.size()) {
      found.resize(n);
      SCCL_CHECK(selectAbove(acc, acc_dtype, begin, end, *threshold, found.data(), nullptr, n, &n));
    }
  }
  int64_t* out = slot + kSlotHeaderWords;
  size_t kept = 0;
  if (n <= keep) {
    std::copy_n(found.data(), n, out);
    kept = n;
  } else {
    std::vector<uint64_t> bits(n);
    for (size_t j = 0; j < n; ++j) bits[j] = magnitudeOf(acc, acc_dtype, size_t(found[j]));
    std::vector<uint64_t> order(bits);
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
  const size_t total = size_t(w.nranks) * w.capacity;
  for (size_t s = 0; s < total; ++s) {
    const int64_t i =
        checkedIndex(gathered, w.ranges, s / w.capacity, w.capacity, s % w.capacity, w.bad);
    char* to = static_cast<char*>(values) + s * element;
    if (i < 0) {
      std::memset(to, 0, element);
    } else {
      std::memcpy(to, static_cast<const char*>(acc) + size_t(i) * element, element);
    }
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
  std::vector<int64_t> idx(w.capacity);
  std::vector<char> vals(w.capacity * element);
  for (size_t r = 0; r < size_t(w.nranks); ++r) {
    size_t m = 0;
    for (size_t j = 0; j < w.capacity; ++j) {
      const int64_t i = checkedIndex(gathered, w.ranges, r, w.capacity, j, nullptr);
      if (i < 0) continue;
      idx[m] = i;
      std::memcpy(vals.data() + m * element,
                  static_cast<const char*>(values) + (r * w.capacity + j) * element, element);
      ++m;
    }
    if (m == 0) continue;
    if (divisor != 1) SCCL_CHECK(divideByRanks(vals.data(), m, acc_dtype, int(divisor)));
    SCCL_CHECK(scatterValues(recv, recv_dtype, idx.data(), vals.data(), acc_dtype, m, 1.0));
    SCCL_CHECK(zeroAt(acc, acc_dtype, idx.data(), m));
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
