#include "algorithms/index_exchange.h"

#include <algorithm>

#include "core/ascending_runs.h"
#include "core/error.h"

namespace sccl {
namespace {

scclResult_t checkSlice(const int64_t* slice, uint64_t n, IndexRange allowed, size_t rank) {
  int64_t previous = -1;
  for (uint64_t j = 0; j < n; ++j) {
    int64_t index = slice[j];
    if (index < static_cast<int64_t>(allowed.begin) || index >= static_cast<int64_t>(allowed.end)) {
      return fail(scclRemoteError,
                  "rank %zu sent index %lld outside the range [%zu, %zu) it selects in", rank,
                  static_cast<long long>(index), allowed.begin, allowed.end);
    }
    if (index <= previous) {
      return fail(scclRemoteError, "rank %zu sent indices out of order (%lld after %lld)", rank,
                  static_cast<long long>(index), static_cast<long long>(previous));
    }
    previous = index;
  }
  return scclSuccess;
}

}  // namespace

scclResult_t assembleGlobalIndices(const std::vector<const int64_t*>& slices,
                                   const std::vector<uint64_t>& counts, const SearchSpace& search,
                                   uint64_t iteration, size_t count, std::vector<int64_t>* global) {
  global->clear();
  const bool exclusive = search.exclusive();
  std::vector<size_t> slice_ends;  // where each validated slice ends in *global
  for (size_t r = 0; r < counts.size(); ++r) {
    IndexRange allowed =
        exclusive ? search.rangeFor(static_cast<int>(r), iteration) : IndexRange{0, count};
    const int64_t* slice = slices[r];
    if (counts[r] == 0) continue;
    SCCL_CHECK(checkSlice(slice, counts[r], allowed, r));
    global->insert(global->end(), slice, slice + counts[r]);
    slice_ends.push_back(global->size());
  }
  // The validated slices are each ascending: their union without a sort.
  if (!exclusive) {
    global->resize(mergeAscendingRuns(global->data(), slice_ends.data(), slice_ends.size()));
  }
  return scclSuccess;
}

}  // namespace sccl
