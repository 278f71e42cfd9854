// The CPU backend's kernels of the device-resident gather call (kernels.h, "The device-resident
// gather call"): the plan and the slice rule are kernels/shared/gather_plan.h's, which the CUDA
// backend runs too; the selection is selectAbove's.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"

#include "core/error.h"
#include "kernels/shared/magnitude_bits.h"
#include "kernels/cpu/cpu_kernels.h"

namespace sccl::cpu {

scclResult_t selectAbovePadded(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                               double threshold, size_t n, int64_t* idx, size_t padded) {
  size_t found = 0;
  if (n > 0) SCCL_CHECK(selectAbove(x, dtype, begin, end, threshold, idx, nullptr, n, &found));
  if (found != n) {
    return fail(scclInternalError,
                "resident gather: %zu entries at or above the threshold, the plan counted %zu",
                found, n);
  }
  std::fill(idx + n, idx + padded, int64_t{-1});
  return scclSuccess;
}

namespace {

// The candidates at or above `bits` into idx, at most `room`; returns how many qualify. While
// room remains each candidate is written at the next free place and kept when it qualifies (no
// branch to mispredict on values near the threshold); once full the rest are only counted. A
// place written but not kept lies at the returned count, which the callers pad.
template <typename Bits>
size_t keepCandidates(const int64_t* cand_idx, const Bits* values, size_t ncand, Bits bits,
                      int64_t* idx, size_t room) {
  size_t kept = 0, j = 0;
  for (; j < ncand && kept < room; ++j) {
    idx[kept] = cand_idx[j];
    kept += magnitudeBits(values[j]) >= bits;
  }
  for (; j < ncand; ++j) kept += magnitudeBits(values[j]) >= bits;
  return kept;
}

}  // namespace

scclResult_t selectCandidatesPadded(const int64_t* cand_idx, const void* cand_val,
                                    scclDataType_t dtype, size_t ncand, double threshold, size_t n,
                                    int64_t* idx, size_t padded) {
  SCCL_REQUIRE_ARG(dtype == scclFloat32 || dtype == scclFloat64,
                   "selectCandidatesPadded: candidates of the accumulator types only, not %s",
                   dataTypeName(dtype));
  SCCL_REQUIRE_ARG(n <= padded, "selectCandidatesPadded: %zu entries in a slice of %zu", n, padded);
  const uint64_t bits = thresholdBits(dtype, threshold);
  const size_t found =
      dtype == scclFloat64
          ? keepCandidates(cand_idx, static_cast<const uint64_t*>(cand_val), ncand, bits, idx, n)
          : keepCandidates(cand_idx, static_cast<const uint32_t*>(cand_val), ncand, uint32_t(bits),
                           idx, n);
  if (found != n) {
    return fail(scclInternalError,
                "resident gather: %zu candidates at or above the threshold, the plan counted %zu",
                found, n);
  }
  std::fill(idx + n, idx + padded, int64_t{-1});
  return scclSuccess;
}

scclResult_t selectAboveCounted(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                double threshold, size_t capacity, int64_t* idx, uint64_t* count) {
  size_t found = 0;
  if (end > begin) {
    SCCL_CHECK(selectAbove(x, dtype, begin, end, threshold, idx, nullptr, capacity, &found));
  }
  std::fill(idx + std::min(found, capacity), idx + capacity, int64_t{-1});
  *count = found;
  return scclSuccess;
}

scclResult_t selectAboveCountedAt(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                  const uint64_t* threshold_bits, size_t capacity, int64_t* idx,
                                  uint64_t* count) {
  SCCL_REQUIRE_ARG(dtype == scclFloat32 || dtype == scclFloat64,
                   "selectAboveCountedAt: the accumulator types only, not %s", dataTypeName(dtype));
  // The pattern is of a value of the type: read back as that value, it selects by the same bits.
  const double threshold = dtype == scclFloat64
                               ? std::bit_cast<double>(*threshold_bits)
                               : double(std::bit_cast<float>(uint32_t(*threshold_bits)));
  return selectAboveCounted(x, dtype, begin, end, threshold, capacity, idx, count);
}

scclResult_t selectCandidatesCounted(const int64_t* cand_idx, const void* cand_val,
                                     scclDataType_t dtype, size_t ncand, double threshold,
                                     size_t capacity, int64_t* idx, uint64_t* count) {
  SCCL_REQUIRE_ARG(dtype == scclFloat32 || dtype == scclFloat64,
                   "selectCandidatesCounted: candidates of the accumulator types only, not %s",
                   dataTypeName(dtype));
  const uint64_t bits = thresholdBits(dtype, threshold);
  const size_t found = dtype == scclFloat64
                           ? keepCandidates(cand_idx, static_cast<const uint64_t*>(cand_val), ncand,
                                            bits, idx, capacity)
                           : keepCandidates(cand_idx, static_cast<const uint32_t*>(cand_val), ncand,
                                            uint32_t(bits), idx, capacity);
  std::fill(idx + std::min(found, capacity), idx + capacity, int64_t{-1});
  *count = found;
  return scclSuccess;
}

scclResult_t planGather(const uint64_t* records, const GatherPlanParams& params,
                        const uint64_t* ranges, const uint32_t* fault, uint64_t* plan) {
  planGatherCall(records, params, ranges, *fault, plan);
  return scclSuccess;
}

scclResult_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                      size_t first_rank, const uint64_t* plan,
                                      const uint64_t* ranges, int64_t* global, uint32_t* fault) {
  for (size_t r = first_rank; r < first_rank + nranks; ++r) {
    const uint64_t k = plan[kGatherPlanHeaderWords + 2 * r];
    const uint64_t offset = plan[kGatherPlanHeaderWords + 2 * r + 1];
    const int64_t* slice = gathered + (r - first_rank) * slot;
    for (uint64_t j = 0; j < k; ++j) {
      const bool valid = sliceEntryValid(slice, j, ranges[2 * r], ranges[2 * r + 1]);
      global[offset + j] = valid ? slice[j] : 0;
      if (!valid) *fault = std::min<uint32_t>(*fault, uint32_t(r));
    }
  }
  return scclSuccess;
}

namespace {

// Magnitude pattern of element i (the selection's order: NaN above +inf).
uint64_t magnitudeAt(const void* x, size_t element, size_t i) {
  switch (element) {
    case 2: return magnitudeBits(static_cast<const uint16_t*>(x)[i]);
    case 4: return magnitudeBits(static_cast<const uint32_t*>(x)[i]);
    default: return magnitudeBits(static_cast<const uint64_t*>(x)[i]);
  }
}

}  // namespace

scclResult_t selectTopK(const void* x, scclDataType_t dtype, size_t begin, size_t end, size_t k,
                        int64_t* idx, uint64_t* kth_bits) {
  SCCL_REQUIRE_ARG(k >= 1 && begin + k <= end, "selectTopK: k %zu of [%zu, %zu)", k, begin, end);
  double kth = 0;
  SCCL_CHECK(kthLargestAbs(x, dtype, begin, end, k, &kth));
  if (std::isnan(kth)) {
    // NaN among the k largest: the plan discards or refuses the call, so any k in-range indices
    // do (they are never used); the pattern says NaN.
    for (size_t j = 0; j < k; ++j) idx[j] = int64_t(begin + j);
    *kth_bits = ~uint64_t{0};
    return scclSuccess;
  }
  // Every entry at or above the k-th value, then the ties at it trimmed to the lowest indices.
  thread_local std::vector<int64_t> selected;  // scratch kept per thread
  if (selected.size() < k) selected.resize(k);
  size_t n = 0;
  SCCL_CHECK(selectAbove(x, dtype, begin, end, kth, selected.data(), nullptr, k, &n));
  if (n > k) {
    selected.resize(n);
    SCCL_CHECK(selectAbove(x, dtype, begin, end, kth, selected.data(), nullptr, n, &n));
  }
  const size_t element = dataTypeSize(dtype);
  const uint64_t cut = thresholdBits(dtype, kth);  // the k-th largest element's own pattern
  if (n == k) {  // no tie past the k-th: every selected entry stays (no reads of x at them)
    std::copy_n(selected.data(), k, idx);
    *kth_bits = cut;
    return scclSuccess;
  }
  size_t above = 0;
  for (size_t j = 0; j < n; ++j) above += magnitudeAt(x, element, size_t(selected[j])) > cut;
  size_t ties = k - above, kept = 0;
  for (size_t j = 0; j < n && kept < k; ++j) {
    const uint64_t m = magnitudeAt(x, element, size_t(selected[j]));
    if (m > cut || (m == cut && ties > 0)) {
      if (m == cut) --ties;
      idx[kept++] = selected[j];
    }
  }
  if (kept != k) return fail(scclInternalError, "selectTopK: %zu of %zu kept", kept, k);
  *kth_bits = cut;
  return scclSuccess;
}

scclResult_t selectTopKCandidates(const int64_t* cand_idx, const void* cand_val,
                                  scclDataType_t dtype, size_t ncand, size_t k, int64_t* idx,
                                  uint64_t* kth_bits) {
  SCCL_REQUIRE_ARG(k >= 1 && k <= ncand, "selectTopKCandidates: k %zu of %zu candidates", k, ncand);
  // The top-k of the candidates' values by position: positions ascend as the indices do, so the
  // ties' lowest positions are their lowest indices; then each position becomes its index.
  SCCL_CHECK(selectTopK(cand_val, dtype, 0, ncand, k, idx, kth_bits));
  for (size_t j = 0; j < k; ++j) idx[j] = cand_idx[size_t(idx[j])];
  return scclSuccess;
}

}  // namespace sccl::cpu
