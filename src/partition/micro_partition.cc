// MiCRO (D. Yoon, S. Oh, "MiCRO: Near-Zero Cost Gradient Sparsification for Scaling and
// Accelerating Distributed DNN Training"): coarse-grained exclusive partitions.
//   1. Split [0, count) into n contiguous partitions: size count / n, one more element for each
//      of the first count % n (as the reference MicroReducer).
//   2. At iteration t rank r takes partition (t % n + r) % n, so the ranks' search ranges never
//      overlap (no gradient build-up) and each rank visits the whole vector every n iterations.
// The partitions never change; observeCounts() is ignored (ExDyna adds the rebalancing).
// Bytes on the wire of the exchange: docs/algorithms/micro.md.
// Differences from the reference: none in the partitioning. It also works for count < n (the
// last n - count partitions are empty) and n = 1 (one partition, the whole vector).
#include <algorithm>

#include "partition/search_space.h"
#include "partition/search_space_factories.h"

namespace sccl {
namespace {

class MicroSearchSpace final : public SearchSpace {
 public:
  explicit MicroSearchSpace(const SearchSpaceParams& params)
      : count_(params.count), nranks_(params.nranks) {}

  const char* name() const override { return "micro"; }
  bool exclusive() const override { return true; }

  IndexRange rangeFor(int rank, uint64_t iteration) const override {
    if (rank < 0 || rank >= nranks_) return {};
    return partition(cyclicPartition(rank, iteration, nranks_));
  }

  void observeCounts(const uint64_t*, uint64_t) override {}
  size_t partitionCount() const override { return static_cast<size_t>(nranks_); }

  IndexRange partition(size_t p) const override {
    const size_t n = static_cast<size_t>(nranks_);
    if (p >= n) return {};
    const size_t base = count_ / n, extra = count_ % n;
    // The first `extra` partitions hold base + 1 elements.
    const size_t begin = p * base + std::min(p, extra);
    return {begin, begin + base + (p < extra ? 1 : 0)};
  }

  void reset() override {}

 private:
  size_t count_;
  int nranks_;
};

}  // namespace

scclResult_t createMicroSearchSpace(const SearchSpaceParams& params,
                                    std::unique_ptr<SearchSpace>* out) {
  *out = std::make_unique<MicroSearchSpace>(params);
  return scclSuccess;
}

}  // namespace sccl
