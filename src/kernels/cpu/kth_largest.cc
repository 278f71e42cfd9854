// The k-th largest |x| on the CPU, exactly, by selection on magnitude bit patterns.
//
// Clearing the sign bit of an IEEE value leaves a key whose unsigned order is the order of |x|,
// with NaN above +inf (select.h), so the k-th largest |x| is the k-th largest key. Two ways to it:
//
// Sampled bound (top-k ranks, the case of the Top-k / CLT-k baselines). kSampleElements keys at a
// fixed stride predict a key `lo` four standard deviations (plus a margin) below the k-th largest.
// One selectAbove pass at |x| >= lo (vectorised, prefetching, on the pool) copies every element
// at or above it; if that is at least k elements and fits the scratch, the answer is the k-th
// largest of those few. Otherwise (a misleading sample, or many ties at lo) the histogram path
// runs; the result does not depend on which path found it.
//
// Radix histograms (any k). The key is resolved 12 bits at a time from the top:
//  1. A parallel pass histograms the top digit of every key, one histogram per part; their sum
//     gives the bin that holds the k-th largest key, and k becomes the rank inside that bin.
//  2. If that bin holds at most 1/8 of the range and kMaxCandidates keys (gradients spread over
//     many binades, and the top digit includes 4 mantissa bits of float32), a second pass copies
//     its keys into a scratch buffer, each part at the offset its own histogram implies.
//  3. Otherwise (many equal or nearly equal magnitudes) the next digit is histogrammed over the
//     whole range again, restricted to the keys with the prefix found so far, and so on.
// Candidate keys in the scratch are resolved the same way, serially, compacting the chosen bin in
// place at each digit, until few are left for std::nth_element. Ranges of up to kSerialElements
// are copied to the scratch at once.
//
// Scratch buffers belong to the calling thread and are reused across calls. The result is exact,
// hence the same on every ISA and split. The histogram passes are scalar: their updates are
// scattered increments, which AVX2 and AVX-512 F/BW cannot vectorise (no conflict detection).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <new>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/select.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl::cpu {
namespace {

constexpr unsigned kDigitBits = 12;
constexpr size_t kBins = size_t{1} << kDigitBits;
constexpr size_t kMinPartElements = size_t{1} << 16;
// Up to this many elements a copy of the keys costs less than two passes over the data.
constexpr size_t kSerialElements = size_t{1} << 16;
// Candidate sets this small go to std::nth_element rather than another histogram.
constexpr size_t kNthElementKeys = size_t{1} << 12;
// The most candidates copied to the scratch (32 MiB of float64 keys).
constexpr size_t kMaxCandidates = size_t{1} << 22;
// Keys sampled to predict the bound of the sampled path; the most elements that path may select
// (16 MiB of indices, which selectAbove writes too).
constexpr size_t kSampleElements = size_t{1} << 14;
constexpr size_t kMaxSampledSelection = size_t{1} << 21;
// Interleaved sub-histograms of a pass: with one, each increment of a run of equal digits (ties,
// narrow data) would wait for the previous one through the store buffer.
constexpr size_t kSubHistograms = 4;
// Elements counted into 32-bit sub-histograms before they are added to the 64-bit histogram.
constexpr size_t kFlushElements = size_t{1} << 31;

// Keys are the element's bits with the sign cleared: kKeyBits significant bits.
template <typename Key>
constexpr unsigned kKeyBits = 8 * sizeof(Key) - 1;

template <typename Key>
constexpr unsigned kLevels = (kKeyBits<Key> + kDigitBits - 1) / kDigitBits;

// The digit of `level` is bits [digitShift(level), prefixShift(level)) of the key; the bits from
// prefixShift(level) up were resolved by the levels before.
template <typename Key>
constexpr unsigned digitShift(unsigned level) {
  unsigned resolved = (level + 1) * kDigitBits;
  return resolved >= kKeyBits<Key> ? 0 : kKeyBits<Key> - resolved;
}

template <typename Key>
constexpr unsigned prefixShift(unsigned level) {
  return level == 0 ? kKeyBits<Key> : digitShift<Key>(level - 1);
}

// Where the search stands: the answer is the rank-th largest of the keys whose bits from
// prefixShift(level) up equal prefix.
template <typename Key>
struct Search {
  unsigned level = 0;
  Key prefix = 0;
  uint64_t rank = 0;

  bool done() const { return level == kLevels<Key>; }
};

template <typename Key>
inline Key magnitudeKey(const Key* x, size_t i) {
  return static_cast<Key>(x[i] & cpu_select::kMagnitudeMask<Key>);
}

// Adds the digits of bits [low, high) of the keys of x[begin, end) to sub[s * kBins + digit],
// spreading consecutive elements over the sub-histograms; kFiltered: only keys whose bits from
// `high` up equal prefix.
template <bool kFiltered, typename Key>
void countDigits(const Key* x, size_t begin, size_t end, unsigned high, unsigned low, Key prefix,
                 uint32_t* sub) {
  const size_t digit_mask = (size_t{1} << (high - low)) - 1;
  auto count = [&](size_t i, uint32_t* into) {
    Key key = magnitudeKey(x, i);
    if (!kFiltered || static_cast<Key>(key >> high) == prefix) ++into[(key >> low) & digit_mask];
  };
  size_t i = begin;
  for (; i + kSubHistograms <= end; i += kSubHistograms) {
    for (size_t s = 0; s < kSubHistograms; ++s) count(i + s, sub + s * kBins);
  }
  for (; i < end; ++i) count(i, sub);
}

// hist = the counts of the digits of search.level among the keys of x[begin, end) with the
// search's prefix. sub is room for kSubHistograms * kBins counters.
template <typename Key>
void histogramRange(const Key* x, size_t begin, size_t end, const Search<Key>& search,
                    uint32_t* sub, uint64_t* hist) {
  std::fill_n(hist, kBins, 0);
  const unsigned high = prefixShift<Key>(search.level);
  const unsigned low = digitShift<Key>(search.level);
  for (size_t block = begin; block < end; block += std::min(kFlushElements, end - block)) {
    const size_t block_end = block + std::min(kFlushElements, end - block);
    std::fill_n(sub, kSubHistograms * kBins, 0);
    if (search.level == 0) {
      countDigits<false>(x, block, block_end, high, low, search.prefix, sub);
    } else {
      countDigits<true>(x, block, block_end, high, low, search.prefix, sub);
    }
    for (size_t s = 0; s < kSubHistograms; ++s) {
      for (size_t b = 0; b < kBins; ++b) hist[b] += sub[s * kBins + b];
    }
  }
}

// Moves the search one level down, into the bin of `hist` (the counts of the current level's
// digits among the keys with the prefix) that holds the rank-th largest key. Returns the bin.
template <typename Key>
size_t descend(Search<Key>& search, const uint64_t* hist) {
  size_t bin = kBins - 1;
  while (bin > 0 && search.rank > hist[bin]) search.rank -= hist[bin--];
  const unsigned width = prefixShift<Key>(search.level) - digitShift<Key>(search.level);
  search.prefix = static_cast<Key>((uint64_t{search.prefix} << width) | bin);
  ++search.level;
  return bin;
}

// The answer among keys[0, n), all of which have the search's prefix. Reorders keys.
template <typename Key>
Key resolveKeys(Key* keys, size_t n, Search<Key> search, uint64_t* hist) {
  while (!search.done() && n > kNthElementKeys) {
    const unsigned low = digitShift<Key>(search.level);
    const size_t digit_mask = (size_t{1} << (prefixShift<Key>(search.level) - low)) - 1;
    std::fill_n(hist, kBins, 0);
    for (size_t i = 0; i < n; ++i) ++hist[(keys[i] >> low) & digit_mask];
    const size_t bin = descend(search, hist);
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (((keys[i] >> low) & digit_mask) == bin) keys[kept++] = keys[i];
    }
    n = kept;
  }
  if (search.done()) return search.prefix;  // every key left equals the answer
  std::nth_element(keys, keys + (search.rank - 1), keys + n, std::greater<Key>());
  return keys[search.rank - 1];
}

// A buffer that grows geometrically and never shrinks, so steady calls allocate nothing.
template <typename T>
class Scratch {
 public:
  T* get(size_t n) {
    if (n > capacity_) {
      size_t grown = std::max(n, capacity_ * 2);
      data_ = std::make_unique_for_overwrite<T[]>(grown);
      capacity_ = grown;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

// Per calling thread: every rank thread of the in-process transport has its own.
thread_local Scratch<uint64_t> t_histograms;
thread_local Scratch<uint32_t> t_sub_histograms;
thread_local Scratch<int64_t> t_indices;
template <typename Key>
thread_local Scratch<Key> t_keys;

// The magnitude a key stands for, exactly (NaN for NaN patterns).
double keyValue(scclDataType_t dtype, uint64_t key) {
  switch (dtype) {
    case scclFloat64: {
      double value;
      std::memcpy(&value, &key, sizeof(value));
      return value;
    }
    case scclFloat32: return bitsToFloat(static_cast<uint32_t>(key));
    case scclFloat16: return fp16ToFloat(static_cast<uint16_t>(key));
    default: break;
  }
  return bf16ToFloat(static_cast<uint16_t>(key));
}

// Copies the keys of x[begin, end) with the search's prefix to out, which has room for them.
template <typename Key>
void collectRange(const Key* x, size_t begin, size_t end, const Search<Key>& search, Key* out) {
  const unsigned high = prefixShift<Key>(search.level);
  for (size_t i = begin; i < end; ++i) {
    Key key = magnitudeKey(x, i);
    if (static_cast<Key>(key >> high) == search.prefix) *out++ = key;
  }
}

// The radix histogram path of the file comment over x[begin, begin + n).
template <typename Key>
Key selectByHistograms(const Key* x, size_t begin, size_t n, uint64_t k) {
  const size_t nparts = kernelPartCount(n, kMinPartElements);
  uint64_t* hists = t_histograms.get((nparts + 1) * kBins);
  uint64_t* total = hists + nparts * kBins;
  uint32_t* subs = t_sub_histograms.get(nparts * kSubHistograms * kBins);
  auto part_begin = [&](size_t p) { return begin + n * p / nparts; };
  Search<Key> search;
  search.rank = k;
  for (;;) {
    cpuThreadPool().parallelFor(nparts, [&](size_t p) {
      histogramRange(x, part_begin(p), part_begin(p + 1), search, subs + p * kSubHistograms * kBins,
                     hists + p * kBins);
    });
    std::copy_n(hists, kBins, total);
    for (size_t p = 1; p < nparts; ++p) {
      for (size_t b = 0; b < kBins; ++b) total[b] += hists[p * kBins + b];
    }
    const size_t bin = descend(search, total);
    if (search.done()) return search.prefix;
    const uint64_t candidates = total[bin];
    if (candidates > kMaxCandidates || candidates > n / 8) continue;
    Key* keys = t_keys<Key>.get(candidates);
    cpuThreadPool().parallelFor(nparts, [&](size_t p) {
      size_t offset = 0;
      for (size_t q = 0; q < p; ++q) offset += hists[q * kBins + bin];
      collectRange(x, part_begin(p), part_begin(p + 1), search, keys + offset);
    });
    return resolveKeys(keys, candidates, search, total);
  }
}

// The sampled-bound path of the file comment over x[begin, begin + n), n >= kSampleElements.
// Returns false, with nothing decided, when the bound is unusable.
template <typename Key>
bool selectBySample(const Key* x, scclDataType_t dtype, size_t begin, size_t n, uint64_t k,
                    Key* answer) {
  const size_t capacity = std::min(n / 8, kMaxSampledSelection);
  const double expected_rank = static_cast<double>(k) * kSampleElements / static_cast<double>(n);
  const double bound_rank = expected_rank + 4 * std::sqrt(expected_rank) + 16;
  if (bound_rank >= kSampleElements ||
      bound_rank / kSampleElements * static_cast<double>(n) > static_cast<double>(capacity)) {
    return false;  // the predicted selection would not fit
  }
  Key* sample = t_keys<Key>.get(std::max(kSampleElements, capacity));
  for (size_t j = 0; j < kSampleElements; ++j) {
    sample[j] = magnitudeKey(x, begin + j * n / kSampleElements);
  }
  const size_t rank = static_cast<size_t>(bound_rank);
  std::nth_element(sample, sample + (rank - 1), sample + kSampleElements, std::greater<Key>());
  const double threshold = keyValue(dtype, sample[rank - 1]);
  if (std::isnan(threshold)) return false;  // not a threshold selectAbove takes

  Key* values = sample;  // the sample is no longer needed
  int64_t* indices = t_indices.get(capacity);
  size_t selected = 0;
  if (selectAbove(x, dtype, begin, begin + n, threshold, indices, values, capacity, &selected) !=
          scclSuccess ||
      selected < k || selected > capacity) {
    return false;
  }
  for (size_t i = 0; i < selected; ++i) values[i] &= cpu_select::kMagnitudeMask<Key>;
  Search<Key> search;
  search.rank = k;
  *answer = resolveKeys(values, selected, search, t_histograms.get(kBins));
  return true;
}

template <typename Key>
Key kthLargestKey(const void* data, scclDataType_t dtype, size_t begin, size_t end, uint64_t k) {
  const Key* x = static_cast<const Key*>(data);
  const size_t n = end - begin;
  if (n > kSerialElements) {
    Key answer;
    if (selectBySample(x, dtype, begin, n, k, &answer)) return answer;
    return selectByHistograms(x, begin, n, k);
  }
  Key* keys = t_keys<Key>.get(n);
  for (size_t i = 0; i < n; ++i) keys[i] = magnitudeKey(x, begin + i);
  Search<Key> search;
  search.rank = k;
  return resolveKeys(keys, n, search, t_histograms.get(kBins));
}

}  // namespace

scclResult_t kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                           uint64_t k, double* value) {
  if (!isFloatingType(dtype)) {
    return fail(scclInvalidArgument, "kthLargestAbs: unsupported dtype %s", dataTypeName(dtype));
  }
  const size_t n = end >= begin ? end - begin : 0;
  if (k == 0 || k > n) {
    return fail(scclInvalidArgument, "kthLargestAbs: k = %llu is outside [1, %zu]",
                static_cast<unsigned long long>(k), n);
  }
  try {
    uint64_t key = 0;
    switch (dataTypeSize(dtype)) {
      case 2: key = kthLargestKey<uint16_t>(x, dtype, begin, end, k); break;
      case 4: key = kthLargestKey<uint32_t>(x, dtype, begin, end, k); break;
      default: key = kthLargestKey<uint64_t>(x, dtype, begin, end, k); break;
    }
    *value = keyValue(dtype, key);
  } catch (const std::bad_alloc&) {
    return fail(scclSystemError, "kthLargestAbs: out of memory for the scratch buffers");
  }
  return scclSuccess;
}

}  // namespace sccl::cpu
