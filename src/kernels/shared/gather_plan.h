// The plan of a device-resident gather call (algorithms/resident_gather.cc): from every rank's
// record (its call header and its density-correction bins, all-gathered in one collective) the
// threshold edge, every rank's selection count, the offsets of the global index list and the
// padded size of the index exchange, with every peer's record checked first. Computed by the same
// function on the CPU backend and, as a one-thread kernel, on the CUDA backend, so both decide
// alike bit for bit; the host reads the plan back once per call (64 + 16 n bytes) to size the
// index exchange. Also the slice check of the global index list both backends apply.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/host_device.h"

namespace sccl {

// A rank's record: these header words, then the window's bins + 1 counts (absBitHistogram's
// layout over the rank's exclusive range; zeros for an empty range).
inline constexpr size_t kGatherRecordHeaderWords = 4;
enum GatherRecordWord : size_t {
  kRecordFingerprint = 0,  // the sparsifier's call fingerprint (config, count, dtype, density)
  kRecordSequence = 1,     // the sparsifier's call number
  kRecordNonFinite = 2,    // NaN/Inf values in the rank's accumulated gradient
  kRecordReserved = 3,     // 0; a sole selector's: the magnitude pattern of its k-th entry
};

// The plan: kGatherPlanHeaderWords words, then (count, offset) for every rank.
inline constexpr size_t kGatherPlanHeaderWords = 8;
enum GatherPlanWord : size_t {
  kPlanStatus = 0,        // GatherPlanStatus
  kPlanRank = 1,          // the rank a failed status names
  kPlanDetailA = 2,       // mismatch: its sequence; non-finite: its count; too many: its count
  kPlanDetailB = 3,       // mismatch: its fingerprint; too many: what it may select
  kPlanEdge = 4,          // the chosen edge; with a sole selector its record's reserved word
  kPlanKGlobal = 5,       // entries of all ranks at or above it (the global list's length)
  kPlanMaxK = 6,          // the largest rank count (the padded slice of the index all-gather)
  kPlanOwnNonFinite = 7,  // NaN/Inf values of the rank that computed the plan
};
enum GatherPlanStatus : uint64_t {
  kPlanOk = 0,
  kPlanMismatch = 1,   // a rank at another call or config: scclInvalidUsage
  kPlanTooMany = 2,    // a rank's bins hold more entries than its range: scclRemoteError
  kPlanNonFinite = 3,  // some rank has NaN/Inf: the non-finite policy
  kPlanPeerFault = 4,  // a peer's indices failed their check at an earlier call: scclRemoteError
};

inline constexpr uint64_t kNoSoleSelector = ~uint64_t{0};

// The index-check fault word: kNoIndexFault, or the lowest rank whose indices failed.
inline constexpr uint32_t kNoIndexFault = 0xffffffffu;

SCCL_HOST_DEVICE constexpr size_t gatherPlanWords(size_t nranks) {
  return kGatherPlanHeaderWords + 2 * nranks;
}

// The edge whose count at or above it is nearest k, ties to the edge nearest centre_edge; counts
// come from count_at(j) for j <= bins (absBitHistogram's layout). *at_or_above = that count. The
// density correction's rule (estimators/magnitude_window.h), shared by host and device.
template <typename CountAt>
SCCL_HOST_DEVICE size_t nearestCountEdge(const CountAt& count_at, size_t bins, uint64_t k,
                                         size_t centre_edge, uint64_t* at_or_above) {
  size_t best = bins;
  uint64_t running = count_at(bins);
  uint64_t best_count = running;
  uint64_t best_error = running > k ? running - k : k - running;
  size_t best_distance = bins > centre_edge ? bins - centre_edge : centre_edge - bins;
  for (size_t j = bins; j-- > 0;) {
    running += count_at(j);
    const uint64_t error = running > k ? running - k : k - running;
    const size_t distance = j > centre_edge ? j - centre_edge : centre_edge - j;
    if (error < best_error || (error == best_error && distance < best_distance)) {
      best = j;
      best_count = running;
      best_error = error;
      best_distance = distance;
    }
  }
  *at_or_above = best_count;
  return best;
}

struct GatherPlanParams {
  uint64_t fingerprint = 0;  // this rank's
  uint64_t sequence = 0;     // this rank's call number
  uint64_t k_target = 0;
  uint64_t bins = 0;         // window bins (a record holds bins + 1 counts)
  uint64_t centre_edge = 0;  // the estimator's threshold's edge (ties go toward it)
  uint64_t nranks = 0;
  uint64_t self = 0;  // the rank computing the plan
  // 1: the density correction's edge nearest k_target; 0: edge 0 (a threshold fixed before the
  // data, whose window starts at it: every counted entry is selected).
  uint64_t nearest_edge = 1;
  uint64_t sole = kNoSoleSelector;  // the rank that selects alone (CLT-k's leader), if any
};

// The global count of bin j: the sum over ranks in rank order (exact integers).
struct SummedBin {
  const uint64_t* records;
  size_t record_words;
  uint64_t nranks;
  SCCL_HOST_DEVICE uint64_t operator()(size_t j) const {
    uint64_t sum = 0;
    for (uint64_t r = 0; r < nranks; ++r)
      sum += records[r * record_words + kGatherRecordHeaderWords + j];
    return sum;
  }
};

// plan (gatherPlanWords(nranks) words) from the all-gathered records (nranks records of
// kGatherRecordHeaderWords + bins + 1 words). ranges: 2 nranks words, rank r may select in
// [ranges[2r], ranges[2r+1]). fault: the index-check word of the earlier calls. The checks run
// rank by rank, as the host reduction's header checks do: another call or config first, then a
// count above the range (so no sum below can overflow: every rank's total is at most its range);
// then the non-finite values of any rank.
SCCL_HOST_DEVICE inline void planGatherCall(const uint64_t* records, const GatherPlanParams& p,
                                            const uint64_t* ranges, uint32_t fault,
                                            uint64_t* plan) {
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  if (fault != kNoIndexFault) {
    plan[kPlanStatus] = kPlanPeerFault;
    plan[kPlanRank] = fault;
    return;
  }
  const size_t record_words = kGatherRecordHeaderWords + p.bins + 1;
  plan[kPlanOwnNonFinite] = records[p.self * record_words + kRecordNonFinite];
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t* record = records + r * record_words;
    if (record[kRecordFingerprint] != p.fingerprint || record[kRecordSequence] != p.sequence) {
      plan[kPlanStatus] = kPlanMismatch;
      plan[kPlanRank] = r;
      plan[kPlanDetailA] = record[kRecordSequence];
      plan[kPlanDetailB] = record[kRecordFingerprint];
      return;
    }
    const uint64_t allowed = ranges[2 * r + 1] - ranges[2 * r];
    uint64_t total = 0;  // saturating: a peer's counts may be anything
    for (size_t j = 0; j <= p.bins; ++j) {
      const uint64_t c = record[kGatherRecordHeaderWords + j];
      total = c > ~uint64_t{0} - total ? ~uint64_t{0} : total + c;
    }
    if (total > allowed) {
      plan[kPlanStatus] = kPlanTooMany;
      plan[kPlanRank] = r;
      plan[kPlanDetailA] = total;
      plan[kPlanDetailB] = allowed;
      return;
    }
  }
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t nonfinite = records[r * record_words + kRecordNonFinite];
    if (nonfinite > 0) {
      plan[kPlanStatus] = kPlanNonFinite;
      plan[kPlanRank] = r;
      plan[kPlanDetailA] = nonfinite;
      return;
    }
  }
  uint64_t k_global = 0;
  const SummedBin summed{records, record_words, p.nranks};
  size_t edge = 0;
  if (p.nearest_edge != 0) {
    edge = nearestCountEdge(summed, p.bins, p.k_target, p.centre_edge, &k_global);
  } else {
    for (size_t j = 0; j <= p.bins; ++j) k_global += summed(j);
  }
  plan[kPlanEdge] = p.sole < p.nranks ? records[p.sole * record_words + kRecordReserved] : edge;
  plan[kPlanKGlobal] = k_global;
  uint64_t offset = 0, max_k = 0;
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t* bins = records + r * record_words + kGatherRecordHeaderWords;
    uint64_t k = 0;
    for (size_t j = edge; j <= p.bins; ++j) k += bins[j];
    plan[kGatherPlanHeaderWords + 2 * r] = k;
    plan[kGatherPlanHeaderWords + 2 * r + 1] = offset;
    offset += k;
    if (k > max_k) max_k = k;
  }
  plan[kPlanMaxK] = max_k;
}

// --- The two-step exchange (many ranks over a host transport): the bins all-reduced, then each
// rank's header with its count all-gathered; the host reduction's collectives and bytes. ---

// A rank's header in the two-step exchange: the record's header words, with the rank's count at
// the plan's edge in the reserved word.
inline constexpr size_t kHeaderCount = kRecordReserved;

// From the bins summed over the ranks (bins + 1 words) and this rank's own: the edge (nearest
// k, or 0), its count over all ranks and this rank's count at it. edge_words: [edge, k_global].
SCCL_HOST_DEVICE inline void planEdgeFromSums(const uint64_t* summed, const uint64_t* own,
                                              const GatherPlanParams& p, uint64_t* edge_words,
                                              uint64_t* own_count) {
  uint64_t k_global = 0;
  size_t edge = 0;
  const auto at = [summed](size_t j) { return summed[j]; };
  if (p.nearest_edge != 0) {
    edge = nearestCountEdge(at, p.bins, p.k_target, p.centre_edge, &k_global);
  } else {
    for (size_t j = 0; j <= p.bins; ++j) k_global += summed[j];
  }
  uint64_t mine = 0;
  for (size_t j = edge; j <= p.bins; ++j) mine += own[j];
  edge_words[0] = edge;
  edge_words[1] = k_global;
  *own_count = mine;
}

// plan from the all-gathered headers (nranks of kGatherRecordHeaderWords words) and edge_words:
// planGatherCall's checks in its order (the fault word; another call or config; a count above
// the rank's range; non-finite values), then the counts and offsets from the headers.
SCCL_HOST_DEVICE inline void planFromHeaders(const uint64_t* headers, const GatherPlanParams& p,
                                             const uint64_t* ranges, uint32_t fault,
                                             const uint64_t* edge_words, uint64_t* plan) {
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  if (fault != kNoIndexFault) {
    plan[kPlanStatus] = kPlanPeerFault;
    plan[kPlanRank] = fault;
    return;
  }
  plan[kPlanOwnNonFinite] = headers[p.self * kGatherRecordHeaderWords + kRecordNonFinite];
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t* h = headers + r * kGatherRecordHeaderWords;
    const uint64_t allowed = ranges[2 * r + 1] - ranges[2 * r];
    if (h[kRecordFingerprint] != p.fingerprint || h[kRecordSequence] != p.sequence) {
      plan[kPlanStatus] = kPlanMismatch;
      plan[kPlanRank] = r;
      plan[kPlanDetailA] = h[kRecordSequence];
      plan[kPlanDetailB] = h[kRecordFingerprint];
      return;
    }
    if (h[kHeaderCount] > allowed) {
      plan[kPlanStatus] = kPlanTooMany;
      plan[kPlanRank] = r;
      plan[kPlanDetailA] = h[kHeaderCount];
      plan[kPlanDetailB] = allowed;
      return;
    }
  }
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t nonfinite = headers[r * kGatherRecordHeaderWords + kRecordNonFinite];
    if (nonfinite > 0) {
      plan[kPlanStatus] = kPlanNonFinite;
      plan[kPlanRank] = r;
      plan[kPlanDetailA] = nonfinite;
      return;
    }
  }
  uint64_t offset = 0, max_k = 0;
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t k = headers[r * kGatherRecordHeaderWords + kHeaderCount];
    plan[kGatherPlanHeaderWords + 2 * r] = k;
    plan[kGatherPlanHeaderWords + 2 * r + 1] = offset;
    offset += k;  // every count is at most its range: no overflow
    if (k > max_k) max_k = k;
  }
  plan[kPlanEdge] = edge_words[0];
  plan[kPlanKGlobal] = offset;  // the list's length: what the ranks send
  plan[kPlanMaxK] = max_k;
}

// Entry j of rank r's slice passes when it lies in the rank's range and above the entry before it
// (the slices of an exclusive search space are disjoint and ascending, so their concatenation in
// rank order is the global list).
SCCL_HOST_DEVICE inline bool sliceEntryValid(const int64_t* slice, size_t j, uint64_t begin,
                                             uint64_t end) {
  const int64_t index = slice[j];
  if (index < int64_t(begin) || index >= int64_t(end)) return false;
  return j == 0 || index > slice[j - 1];
}

}  // namespace sccl
