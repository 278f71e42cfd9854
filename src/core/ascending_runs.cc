// mergeAscendingRuns: see ascending_runs.h.
#include "core/ascending_runs.h"

#include <algorithm>
#include <vector>

namespace sccl {

size_t mergeAscendingRuns(int64_t* data, const size_t* run_ends, size_t nruns) {
  if (nruns == 0) return 0;
  const size_t n = run_ends[nruns - 1];
  // bounds[i], bounds[i + 1): run i of the current round.
  thread_local std::vector<size_t> bounds;
  bounds.assign(1, 0);
  bounds.insert(bounds.end(), run_ends, run_ends + nruns);
  thread_local std::vector<int64_t> scratch;
  if (scratch.size() < n) scratch.resize(n);
  int64_t* from = data;
  int64_t* to = scratch.data();
  size_t runs = nruns;
  while (runs > 1) {
    size_t merged = 0;
    for (size_t first = 0; first < runs; first += 2, ++merged) {
      const size_t begin = bounds[first], middle = bounds[std::min(first + 1, runs)],
                   end = bounds[std::min(first + 2, runs)];
      std::merge(from + begin, from + middle, from + middle, from + end, to + begin);
      bounds[merged] = begin;
    }
    bounds[merged] = n;
    runs = merged;
    std::swap(from, to);
  }
  if (from != data) std::copy_n(from, n, data);
  return size_t(std::unique(data, data + n) - data);
}

}  // namespace sccl
