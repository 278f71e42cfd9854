// The global index set of a call, built from what every rank sent. Everything that came from a
// peer is checked before use: every index inside the range that rank was allowed to select in,
// strictly ascending within a rank's slice (which also rules out duplicates), padding ignored.
#pragma once

#include <cstdint>
#include <vector>

#include "partition/search_space.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// slices[r] points at the counts[r] indices rank r selected (anything after them, such as the
// padding of a padded all-gather, is never read; a slice with count 0 may be null). Exclusive
// search spaces: the slices are disjoint and concatenated in rank order. Otherwise their union
// is returned sorted, without duplicates. A violation is scclRemoteError naming the rank.
scclResult_t assembleGlobalIndices(const std::vector<const int64_t*>& slices,
                                   const std::vector<uint64_t>& counts, const SearchSpace& search,
                                   uint64_t iteration, size_t count, std::vector<int64_t>* global);

}  // namespace sccl
