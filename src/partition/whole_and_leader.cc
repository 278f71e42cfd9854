// The two search spaces without partitions.
//   whole:  every rank selects over [0, count) - Top-k and the hard-threshold sparsifier. Ranks
//           pick overlapping index sets (gradient build-up: up to n*k entries cross the network),
//           so the exchange must de-duplicate.
//   leader: CLT-k (Chen et al., "ScaleCom", cited by the ExDyna paper as cyclic local top-k):
//           only rank t % n selects, over [0, count); the others contribute nothing and wait for
//           the leader's indices. The reference CLTKReducer behaves the same.
#include "partition/search_space.h"
#include "partition/search_space_factories.h"

namespace sccl {
namespace {

bool validRank(int rank, int nranks) {
  return rank >= 0 && rank < nranks;
}

// Both search spaces select over the whole vector: one partition, nothing to rebalance.
class WholeVectorSearchSpace : public SearchSpace {
 public:
  explicit WholeVectorSearchSpace(const SearchSpaceParams& params)
      : count_(params.count), nranks_(params.nranks) {}
  void observeCounts(const uint64_t*, uint64_t) override {}
  size_t partitionCount() const override { return 1; }
  IndexRange partition(size_t p) const override {
    return p == 0 ? IndexRange{0, count_} : IndexRange{};
  }
  void reset() override {}

 protected:
  size_t count_;
  int nranks_;
};

class WholeSearchSpace final : public WholeVectorSearchSpace {
 public:
  using WholeVectorSearchSpace::WholeVectorSearchSpace;
  const char* name() const override { return "whole"; }
  bool exclusive() const override { return nranks_ == 1; }
  IndexRange rangeFor(int rank, uint64_t) const override {
    return validRank(rank, nranks_) ? IndexRange{0, count_} : IndexRange{};
  }
};

class LeaderSearchSpace final : public WholeVectorSearchSpace {
 public:
  using WholeVectorSearchSpace::WholeVectorSearchSpace;
  const char* name() const override { return "leader"; }
  // Only one rank has a non-empty range at any iteration, so selections never overlap.
  bool exclusive() const override { return true; }
  int soleSelector(uint64_t iteration) const override {
    return static_cast<int>(iteration % static_cast<uint64_t>(nranks_));
  }
  IndexRange rangeFor(int rank, uint64_t iteration) const override {
    return rank == soleSelector(iteration) ? IndexRange{0, count_} : IndexRange{};
  }
};

}  // namespace

scclResult_t createWholeSearchSpace(const SearchSpaceParams& params,
                                    std::unique_ptr<SearchSpace>* out) {
  *out = std::make_unique<WholeSearchSpace>(params);
  return scclSuccess;
}

scclResult_t createLeaderSearchSpace(const SearchSpaceParams& params,
                                     std::unique_ptr<SearchSpace>* out) {
  *out = std::make_unique<LeaderSearchSpace>(params);
  return scclSuccess;
}

}  // namespace sccl
