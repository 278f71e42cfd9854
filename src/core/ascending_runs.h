// The union of ascending index lists, as the gather reduction's global list needs it on the host
// (algorithms/index_exchange.cc) and the CPU backend's union plan (kernels/cpu/resident_union.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sccl {

// data[0, run_ends[nruns - 1]) holds nruns ascending runs back to back (run r ends at
// run_ends[r]; an empty run repeats the previous end). Merges them into one ascending list in
// place, drops repeated values, and returns its length. Pairwise rounds of linear merges
// (ceil(log2 nruns) rounds, each moving every entry once, through a scratch buffer kept per
// thread): cheaper than sorting the concatenation, and no allocation once the scratch has grown.
size_t mergeAscendingRuns(int64_t* data, const size_t* run_ends, size_t nruns);

}  // namespace sccl
