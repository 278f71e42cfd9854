// The search-space axis of a sparsifier: where each rank looks for entries to select at one
// iteration. Four spaces, one registry table (search_space_registry.cc):
//   whole   every rank selects over the whole vector (Top-k, hard threshold: gradient build-up)
//   leader  only rank t % n selects, over the whole vector (CLT-k)
//   micro   n equal contiguous partitions, assigned cyclically (MiCRO)
//   exdyna  block partitions rebalanced from the last call's counts, assigned cyclically (ExDyna)
//
// Determinism: a search space holds no floating-point state that could differ between ranks;
// every rank feeds observeCounts() the same all-gathered counts, so every rank's partitions stay
// identical and rangeFor() (a pure function of that state) agrees everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/state_stream.h"
#include "partition/search_knobs.h"
#include "kernels/shared/cyclic_partition.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

struct IndexRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
  bool empty() const { return end == begin; }
  bool operator==(const IndexRange&) const = default;
};

// What a search space is built from: the configuration's knobs (partition/search_knobs.h) and the
// call's shape.
struct SearchSpaceParams : SearchKnobs {
  size_t count = 0;
  int nranks = 1;
};

class SearchSpace {
 public:
  virtual ~SearchSpace() = default;
  virtual const char* name() const = 0;
  // True when the ranges of different ranks at one iteration never overlap (MiCRO/ExDyna, and
  // CLT-k's leader, whose single non-empty range overlaps nothing): selected index sets are then
  // disjoint and the exchange needs no de-duplication.
  virtual bool exclusive() const = 0;
  // The rank that is the only selector at `iteration` (CLT-k's leader), or -1 if all ranks select.
  virtual int soleSelector(uint64_t iteration) const {
    (void)iteration;
    return -1;
  }
  // Where `rank` selects at `iteration` (may be empty). Pure: no state changes.
  virtual IndexRange rangeFor(int rank, uint64_t iteration) const = 0;
  // After a call: counts[r] = entries rank r selected at `iteration` (nranks values, each at most
  // the size of rank r's range; the caller bounds-checks values received from peers). ExDyna
  // rebalances its partitions here; the others ignore it.
  virtual void observeCounts(const uint64_t* counts, uint64_t iteration) = 0;
  // The partitions in partition order (whole: 1 partition = everything; leader: 1) - for tests,
  // stats and docs.
  virtual size_t partitionCount() const = 0;
  virtual IndexRange partition(size_t p) const = 0;
  virtual void reset() = 0;  // back to the state after construction
  // Checkpoints (sparsifier/sparsifier_state.h): what observeCounts() has moved (ExDyna's
  // partitions), the same on every rank. loadState reads it into a space built with the same
  // parameters and checks that it describes partitions of [0, count); a malformed value is
  // scclInvalidArgument naming it (the caller then discards this space). Spaces that observe
  // nothing write nothing.
  virtual void saveState(StateWriter& /*shared*/) const {}
  virtual scclResult_t loadState(StateReader& /*shared*/) { return scclSuccess; }
};

struct SearchSpaceEntry {
  const char* name;
  const char* description;
  scclResult_t (*create)(const SearchSpaceParams&, std::unique_ptr<SearchSpace>*);
};

// One table: whole, leader, micro, exdyna.
const std::vector<SearchSpaceEntry>& searchSpaceRegistry();

// Unknown name -> scclInvalidArgument naming it; bad params -> scclInvalidArgument naming the knob
// (JSON name). Each space checks the knobs it uses; nranks >= 1 is checked for all. *out is set
// only on success.
scclResult_t makeSearchSpace(const std::string& name, const SearchSpaceParams& params,
                             std::unique_ptr<SearchSpace>* out);

}  // namespace sccl
