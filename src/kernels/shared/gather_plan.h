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
// layout over the rank's exclusive range; zeros for an empty range). The words are in the order
// of the host reductions' call header (algorithms/call_header.h: count, non-finite count,
// fingerprint, sequence), so that the two-step exchange's header, whose first word is the rank's
// count, is that header word for word.
inline constexpr size_t kGatherRecordHeaderWords = 4;
enum GatherRecordWord : size_t {
  kRecordReserved = 0,     // 0; a sole selector's: the magnitude pattern of its k-th entry
  kRecordNonFinite = 1,    // NaN/Inf values in the rank's accumulated gradient
  kRecordFingerprint = 2,  // the sparsifier's call fingerprint (config, count, dtype, density)
  kRecordSequence = 3,     // the sparsifier's call number
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
  kPlanBadIndex = 5,   // a peer's indices failed their check in this call (union_plan.h)
  // A rank selected more than the speculative slot holds (union_plan.h): not an error; the
  // plan carries every rank's count and the call exchanges slots again at that size.
  kPlanOverflow = 6,
  kPlanBadBitmap = 7,  // a peer's S2 block bitmap holds a byte other than 0 or 1 (sketch_plan.h)
  kPlanSoleCount = 8,  // a sole selector claims another count than its top-k: scclRemoteError
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
  // What that rank selects, min(k, its range), which every rank knows before the data (the index
  // broadcast's size): its claim must be exactly this (kNoSoleSelector: not checked).
  uint64_t sole_count = kNoSoleSelector;
  // 1: the union's slots were sized before the counts were known (union_plan.h): a count above
  // the slot is kPlanOverflow, not kPlanTooMany.
  uint64_t speculative = 0;
  // max_density_slack's cap on every rank's count (all of them: none): a rank counted past it
  // sends its cap largest entries (algorithms/resident_gather.cc).
  uint64_t cap = ~uint64_t{0};
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

// The peers' checks of a plan, in the host reduction's order: the fault word of the earlier
// calls; rank by rank another call or config, then a claimed count above the rank's range (so no
// sum of counts can overflow: each is at most its range); then non-finite values of any rank.
// header_at(r): rank r's kGatherRecordHeaderWords words; claim_at(r): what it claims to select.
struct PlanCheck {
  uint64_t status = kPlanOk, rank = 0, detail_a = 0, detail_b = 0;
};
template <typename HeaderAt, typename ClaimAt>
SCCL_HOST_DEVICE PlanCheck checkPlanInputs(const HeaderAt& header_at, const ClaimAt& claim_at,
                                           const GatherPlanParams& p, const uint64_t* ranges,
                                           uint32_t fault) {
  if (fault != kNoIndexFault) return PlanCheck{kPlanPeerFault, fault, 0, 0};
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t* h = header_at(r);
    if (h[kRecordFingerprint] != p.fingerprint || h[kRecordSequence] != p.sequence) {
      return PlanCheck{kPlanMismatch, r, h[kRecordSequence], h[kRecordFingerprint]};
    }
    const uint64_t allowed = ranges[2 * r + 1] - ranges[2 * r];
    const uint64_t claim = claim_at(r);
    if (claim > allowed) return PlanCheck{kPlanTooMany, r, claim, allowed};
    if (r == p.sole && p.sole_count != kNoSoleSelector && claim != p.sole_count)
      return PlanCheck{kPlanSoleCount, r, claim, p.sole_count};
  }
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t nonfinite = header_at(r)[kRecordNonFinite];
    if (nonfinite > 0) return PlanCheck{kPlanNonFinite, r, nonfinite, 0};
  }
  return PlanCheck{};
}

// The plan's words once the checks ran (plan zeroed first): a failure's, or the counts and
// offsets from count_at(r) (at most cap each), the largest count, the edge and the list's length.
// own_nonfinite: the planning rank's NaN/Inf count (not written for a fault of an earlier call).
template <typename CountAt>
SCCL_HOST_DEVICE void writePlan(const PlanCheck& check, uint64_t own_nonfinite,
                                const CountAt& count_at, uint64_t nranks, uint64_t edge_word,
                                uint64_t* plan, uint64_t cap = ~uint64_t{0}) {
  plan[kPlanStatus] = check.status;
  plan[kPlanRank] = check.rank;
  plan[kPlanDetailA] = check.detail_a;
  plan[kPlanDetailB] = check.detail_b;
  if (check.status != kPlanPeerFault) plan[kPlanOwnNonFinite] = own_nonfinite;
  if (check.status != kPlanOk) return;
  uint64_t offset = 0, max_k = 0;
  for (uint64_t r = 0; r < nranks; ++r) {
    const uint64_t counted = count_at(r);
    const uint64_t k = counted < cap ? counted : cap;
    plan[kGatherPlanHeaderWords + 2 * r] = k;
    plan[kGatherPlanHeaderWords + 2 * r + 1] = offset;
    offset += k;
    if (k > max_k) max_k = k;
  }
  plan[kPlanEdge] = edge_word;
  plan[kPlanKGlobal] = offset;  // the list's length: what the ranks send
  plan[kPlanMaxK] = max_k;
}

// A rank's total over its record's bins, saturating: a peer's counts may be anything.
SCCL_HOST_DEVICE inline uint64_t saturatingTotal(const uint64_t* counts, size_t n) {
  uint64_t total = 0;
  for (size_t j = 0; j < n; ++j)
    total = counts[j] > ~uint64_t{0} - total ? ~uint64_t{0} : total + counts[j];
  return total;
}

// plan (gatherPlanWords(nranks) words) from the all-gathered records (nranks records of
// kGatherRecordHeaderWords + bins + 1 words): checkPlanInputs with each rank's total as its
// claim, then the edge from the bins summed in rank order and every rank's count at it. ranges:
// 2 nranks words, rank r may select in [ranges[2r], ranges[2r+1]). fault: the index-check word
// of the earlier calls.
SCCL_HOST_DEVICE inline void planGatherCall(const uint64_t* records, const GatherPlanParams& p,
                                            const uint64_t* ranges, uint32_t fault,
                                            uint64_t* plan) {
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  const size_t record_words = kGatherRecordHeaderWords + p.bins + 1;
  const auto record_at = [&](uint64_t r) { return records + r * record_words; };
  const auto bins_at = [&](uint64_t r) { return record_at(r) + kGatherRecordHeaderWords; };
  const PlanCheck check = checkPlanInputs(
      record_at, [&](uint64_t r) { return saturatingTotal(bins_at(r), p.bins + 1); }, p, ranges,
      fault);
  const uint64_t own_nonfinite = record_at(p.self)[kRecordNonFinite];
  size_t edge = 0;
  if (check.status == kPlanOk && p.nearest_edge != 0) {
    uint64_t at_or_above = 0;
    edge = nearestCountEdge(SummedBin{records, record_words, p.nranks}, p.bins, p.k_target,
                            p.centre_edge, &at_or_above);
  }
  const auto count_at = [&](uint64_t r) {
    uint64_t k = 0;
    for (size_t j = edge; j <= p.bins; ++j) k += bins_at(r)[j];
    return k;
  };
  const uint64_t edge_word = p.sole < p.nranks ? record_at(p.sole)[kRecordReserved] : edge;
  writePlan(check, own_nonfinite, count_at, p.nranks, edge_word, plan, p.cap);
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

// plan from the all-gathered headers (nranks of kGatherRecordHeaderWords words, the count in
// kHeaderCount) and edge_words: checkPlanInputs with the headers' counts as claims, then the
// counts and offsets.
SCCL_HOST_DEVICE inline void planFromHeaders(const uint64_t* headers, const GatherPlanParams& p,
                                             const uint64_t* ranges, uint32_t fault,
                                             const uint64_t* edge_words, uint64_t* plan) {
  for (size_t w = 0; w < gatherPlanWords(p.nranks); ++w) plan[w] = 0;
  const auto header_at = [&](uint64_t r) { return headers + r * kGatherRecordHeaderWords; };
  const auto count_at = [&](uint64_t r) { return header_at(r)[kHeaderCount]; };
  const PlanCheck check = checkPlanInputs(header_at, count_at, p, ranges, fault);
  writePlan(check, header_at(p.self)[kRecordNonFinite], count_at, p.nranks, edge_words[0], plan,
            p.cap);
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
