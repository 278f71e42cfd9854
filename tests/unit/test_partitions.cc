// The search spaces (src/partition/): partitions tile [0, count) for every rank count and size,
// the ranks' ranges at each iteration follow the cyclic assignment, ExDyna's block layout matches
// the reference Alg. 2, its rebalancing (Alg. 3) moves blocks toward the light neighbour within
// its limits, and it lowers the all-gather inflation f(t) = n * max k_i / k' on skewed loads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "partition/exdyna_partition.h"
#include "partition/search_space.h"

namespace {

using sccl::IndexRange;
using sccl::SearchSpace;
using sccl::SearchSpaceParams;

const char* const kSpaces[] = {"whole", "leader", "micro", "exdyna"};
const int kRankCounts[] = {1, 2, 3, 4, 5, 8, 64};
const size_t kCounts[] = {0, 1, 2, 7, 31, 32, 33, 1000, 1023, 1024 * 32 + 5, 26000000};

std::unique_ptr<SearchSpace> makeSpace(const std::string& name, size_t count, int nranks) {
  SearchSpaceParams params;
  params.count = count;
  params.nranks = nranks;
  std::unique_ptr<SearchSpace> space;
  REQUIRE(sccl::makeSearchSpace(name, params, &space) == scclSuccess);
  REQUIRE(space != nullptr);
  return space;
}

std::unique_ptr<sccl::ExDynaSearchSpace> makeExDyna(const SearchSpaceParams& params) {
  REQUIRE(sccl::ExDynaSearchSpace::validateParams(params) == scclSuccess);
  return std::make_unique<sccl::ExDynaSearchSpace>(params);
}

// The partitions, in partition order, are contiguous and cover [0, count) exactly.
void requirePartitionsTile(const SearchSpace& space, size_t count) {
  REQUIRE(space.partitionCount() >= 1);
  size_t next = 0;
  for (size_t p = 0; p < space.partitionCount(); ++p) {
    const IndexRange range = space.partition(p);
    REQUIRE(range.begin == next);
    REQUIRE(range.end >= range.begin);
    next = range.end;
  }
  REQUIRE(next == count);
}

// The ranges of all ranks at `iteration`, checked against the space's contract.
void requireRangesAt(const SearchSpace& space, int nranks, size_t count, uint64_t iteration) {
  std::vector<IndexRange> ranges;
  for (int r = 0; r < nranks; ++r) {
    const IndexRange range = space.rangeFor(r, iteration);
    REQUIRE(space.rangeFor(r, iteration) == range);  // pure
    REQUIRE(range.end <= count);
    ranges.push_back(range);
  }
  const std::string name = space.name();
  if (name == "whole") {
    for (const IndexRange& range : ranges) REQUIRE(range == IndexRange{0, count});
    return;
  }
  REQUIRE(space.exclusive());
  if (name == "leader") {
    REQUIRE(space.soleSelector(iteration) == static_cast<int>(iteration % nranks));
    for (int r = 0; r < nranks; ++r) {
      const bool leads = r == space.soleSelector(iteration);
      REQUIRE(ranges[r] == (leads ? IndexRange{0, count} : IndexRange{}));
    }
    return;
  }
  // micro, exdyna: rank r holds partition (t % n + r) % n, so the ranges are a permutation of the
  // partitions and tile [0, count).
  REQUIRE(space.soleSelector(iteration) == -1);
  REQUIRE(space.partitionCount() == static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    REQUIRE(ranges[r] == space.partition((iteration % nranks + r) % nranks));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const IndexRange& a, const IndexRange& b) { return a.begin < b.begin; });
  size_t next = 0;
  for (const IndexRange& range : ranges) {
    REQUIRE(range.begin == next);
    next = range.end;
  }
  REQUIRE(next == count);
}

TEST_CASE("every search space tiles the vector and assigns ranges as its contract says",
          "[partition]") {
  for (const char* name : kSpaces) {
    for (int nranks : kRankCounts) {
      for (size_t count : kCounts) {
        INFO(name << " nranks " << nranks << " count " << count);
        auto space = makeSpace(name, count, nranks);
        REQUIRE(std::string(space->name()) == name);
        requirePartitionsTile(*space, count);
        for (uint64_t t = 0; t < static_cast<uint64_t>(2 * nranks + 1); ++t) {
          requireRangesAt(*space, nranks, count, t);
        }
        requireRangesAt(*space, nranks, count, (uint64_t{1} << 40) + 3);
        REQUIRE(space->rangeFor(-1, 0).empty());
        REQUIRE(space->rangeFor(nranks, 0).empty());
      }
    }
  }
}

TEST_CASE("micro partitions are equal with the extra elements first", "[partition]") {
  auto space = makeSpace("micro", 10, 4);  // sizes 3 3 2 2
  REQUIRE(space->partition(0) == IndexRange{0, 3});
  REQUIRE(space->partition(1) == IndexRange{3, 6});
  REQUIRE(space->partition(2) == IndexRange{6, 8});
  REQUIRE(space->partition(3) == IndexRange{8, 10});
  // Cyclic: at t = 1 rank 0 takes partition 1 and rank 3 partition 0.
  REQUIRE(space->rangeFor(0, 1) == IndexRange{3, 6});
  REQUIRE(space->rangeFor(3, 1) == IndexRange{0, 3});
  auto tiny = makeSpace("micro", 2, 5);  // count < n: the last partitions are empty
  REQUIRE(tiny->partition(1) == IndexRange{1, 2});
  REQUIRE(tiny->partition(4).empty());
}

TEST_CASE("exdyna block layout matches a hand computation of the reference Alg 2", "[partition]") {
  SearchSpaceParams params;
  params.count = 26000000;
  params.nranks = 8;
  auto space = makeExDyna(params);
  // 26000000 / 1024 = 25390; 25390 - 25390 % 32 = 25376; remainder 26000000 - 1024 * 25376.
  REQUIRE(space->layout().block_size == 25376);
  REQUIRE(space->layout().block_size % 32 == 0);
  REQUIRE(space->layout().block_count == 1024);
  REQUIRE(space->layout().remainder == 14976);
  REQUIRE(space->minBlocks() == 32);  // 1024 * 0.25 / 8
  for (size_t p = 0; p < 8; ++p) {
    REQUIRE(space->blocksIn(p) == 128);
    REQUIRE(space->firstBlock(p) == static_cast<int64_t>(128 * p));
    const size_t end = p == 7 ? 26000000 : 3248128 * (p + 1);
    REQUIRE(space->partition(p) == IndexRange{3248128 * p, end});
  }
  // 1024 % 3 = 1: the first partition holds one more block.
  params.nranks = 3;
  auto three = makeExDyna(params);
  REQUIRE(three->blocksIn(0) == 342);
  REQUIRE(three->blocksIn(1) == 341);
  REQUIRE(three->firstBlock(2) == 683);
  REQUIRE(three->minBlocks() == 85);  // floor(1024 * 0.25 / 3)
}

TEST_CASE("exdyna shrinks the block count for small vectors", "[partition]") {
  // count / 1024 < 32: blocks of 32 elements, count / 32 of them.
  auto aligned = sccl::exdynaBlockLayout(1024 * 32 + 5, 8, 1024, 32);
  REQUIRE(aligned.block_size == 32);
  REQUIRE(aligned.block_count == 1024);
  REQUIRE(aligned.remainder == 5);
  auto fewer = sccl::exdynaBlockLayout(1000, 8, 1024, 32);
  REQUIRE(fewer.block_size == 32);
  REQUIRE(fewer.block_count == 31);
  REQUIRE(fewer.remainder == 8);
  // Fewer than n aligned blocks: one-element blocks.
  auto single = sccl::exdynaBlockLayout(1000, 64, 1024, 32);
  REQUIRE(single.block_size == 1);
  REQUIRE(single.block_count == 1000);
  REQUIRE(single.remainder == 0);
  auto empty = sccl::exdynaBlockLayout(0, 4, 1024, 32);
  REQUIRE(empty.block_count == 0);
  REQUIRE(empty.remainder == 0);
  // num_blocks below n is raised to n so that every partition starts with a block.
  auto raised = sccl::exdynaBlockLayout(1 << 20, 8, 4, 32);
  REQUIRE(raised.block_count == 8);
  REQUIRE(raised.block_size == 131072);
}

std::vector<int64_t> blockCounts(const sccl::ExDynaSearchSpace& space) {
  std::vector<int64_t> blocks;
  for (size_t p = 0; p < space.partitionCount(); ++p) blocks.push_back(space.blocksIn(p));
  return blocks;
}

TEST_CASE("exdyna moves blocks toward the light neighbour", "[partition]") {
  SearchSpaceParams params;
  params.count = 26000000;
  params.nranks = 4;
  auto space = makeExDyna(params);
  REQUIRE(blockCounts(*space) == std::vector<int64_t>{256, 256, 256, 256});
  // At t = 0 rank r selected in partition r. k' = 1300, k_acc = 325: partition 0 is heavy and 1
  // light, so one block moves 0 -> 1; k_move = floor(25376 * 1300 / 26e6) = 1 leaves 1 light, 2
  // and 3 are light too, so nothing else moves.
  const uint64_t heavy_first[] = {1000, 100, 100, 100};
  space->observeCounts(heavy_first, 0);
  REQUIRE(blockCounts(*space) == std::vector<int64_t>{255, 257, 256, 256});
  REQUIRE(space->firstBlock(1) == 255);
  REQUIRE(space->lastBlocksMoved() == 1);
  requirePartitionsTile(*space, params.count);

  // Heavy partition 1 gives to both neighbours in one pass: 1 -> 0, then (with its count still
  // above the band after k_move) 1 -> 2.
  space->reset();
  const uint64_t heavy_second[] = {100, 1000, 100, 100};
  space->observeCounts(heavy_second, 0);
  REQUIRE(blockCounts(*space) == std::vector<int64_t>{257, 254, 257, 256});
  REQUIRE(space->lastBlocksMoved() == 2);

  // The counts arrive in rank order: at t = 1 rank 3 handled partition 0.
  space->reset();
  const uint64_t rank_order[] = {100, 100, 100, 1000};
  space->observeCounts(rank_order, 1);
  REQUIRE(blockCounts(*space) == std::vector<int64_t>{255, 257, 256, 256});
}

TEST_CASE("exdyna leaves balanced or empty selections alone", "[partition]") {
  SearchSpaceParams params;
  params.count = 1 << 20;
  params.nranks = 4;
  auto space = makeExDyna(params);
  const std::vector<int64_t> initial = blockCounts(*space);
  const uint64_t balanced[] = {325, 325, 325, 325};
  const uint64_t within_band[] = {335, 315, 330, 320};  // every k_i / k_acc in (1/1.05, 1.05)
  const uint64_t nothing[] = {0, 0, 0, 0};
  for (uint64_t t = 0; t < 20; ++t) {
    space->observeCounts(balanced, t);
    space->observeCounts(within_band, t);
    space->observeCounts(nothing, t);
    REQUIRE(space->lastBlocksMoved() == 0);
  }
  REQUIRE(blockCounts(*space) == initial);
  // k' < n: the reference's int(k'/n) would divide by zero; we compare k_i with k'/n exactly.
  const uint64_t one[] = {1, 0, 0, 0};
  space->observeCounts(one, 0);
  REQUIRE(space->lastBlocksMoved() == 1);
  requirePartitionsTile(*space, params.count);
  // One rank: nothing to balance.
  params.nranks = 1;
  auto single = makeExDyna(params);
  const uint64_t all[] = {12345};
  single->observeCounts(all, 7);
  REQUIRE(single->partition(0) == IndexRange{0, params.count});
}

TEST_CASE("exdyna never shrinks a partition below min_blk", "[partition]") {
  SearchSpaceParams params;
  params.count = 26000000;
  params.nranks = 4;
  params.rebalance_move_blocks = 3;
  auto space = makeExDyna(params);
  REQUIRE(space->minBlocks() == 64);  // 1024 * 0.25 / 4
  const uint64_t skewed[] = {1000, 100, 100, 100};
  for (int call = 0; call < 200; ++call) space->observeCounts(skewed, 0);
  // 256 - 3 * 64 = 64: the next move would leave 61 < 64.
  REQUIRE(space->blocksIn(0) == 64);
  space->observeCounts(skewed, 0);
  REQUIRE(space->lastBlocksMoved() == 0);
  requirePartitionsTile(*space, params.count);
  // A larger factor keeps more blocks.
  params.min_blocks_factor = 1.0;
  auto strict = makeExDyna(params);
  REQUIRE(strict->minBlocks() == 256);
  strict->observeCounts(skewed, 0);
  REQUIRE(strict->lastBlocksMoved() == 0);
}

TEST_CASE("exdyna partitions stay a tiling under arbitrary counts", "[partition]") {
  for (int nranks : kRankCounts) {
    for (size_t count : kCounts) {
      INFO("nranks " << nranks << " count " << count);
      SearchSpaceParams params;
      params.count = count;
      params.nranks = nranks;
      auto space = makeExDyna(params);
      const std::vector<int64_t> initial = blockCounts(*space);
      uint64_t state = 0x9E3779B97F4A7C15ull ^ count ^ (uint64_t(nranks) << 32);
      std::vector<uint64_t> counts(nranks);
      for (uint64_t t = 0; t < 60; ++t) {
        for (int r = 0; r < nranks; ++r) {
          state = state * 6364136223846793005ull + 1442695040888963407ull;
          const size_t size = space->rangeFor(r, t).size();
          // Skewed: some ranks select everything, some nothing.
          counts[r] = size == 0 ? 0 : (state >> 33) % (size + 1) / ((state >> 60) % 4 + 1);
        }
        space->observeCounts(counts.data(), t);
        requirePartitionsTile(*space, count);
        requireRangesAt(*space, nranks, count, t + 1);
        for (size_t p = 0; p < space->partitionCount(); ++p) {
          REQUIRE(space->blocksIn(p) >= std::min(initial[p], space->minBlocks()));
        }
      }
    }
  }
}

// Synthetic load: mass per element (selections expected there) from a profile over x in [0, 1),
// so that static partitions leave some ranks with several times the average count.
struct MassProfile {
  std::vector<uint64_t> prefix;
  template <typename Profile>
  MassProfile(size_t count, Profile profile) : prefix(count + 1, 0) {
    for (size_t i = 0; i < count; ++i) {
      prefix[i + 1] = prefix[i] + profile(static_cast<double>(i) / static_cast<double>(count));
    }
  }
  uint64_t in(const IndexRange& range) const { return prefix[range.end] - prefix[range.begin]; }
};

double inflation(const std::vector<uint64_t>& counts) {
  uint64_t total = 0, largest = 0;
  for (uint64_t c : counts) {
    total += c;
    largest = std::max(largest, c);
  }
  return static_cast<double>(largest) * static_cast<double>(counts.size()) /
         static_cast<double>(total);
}

// Runs ExDyna on the load for `iterations` calls, with the counts of each call scattered by +-10 %
// (real counts fluctuate between iterations; without it Alg. 3 can stall once a heavy partition's
// neighbour sits inside the band, since it only moves blocks from heavy to light), and returns the
// mean f(t) of the last `late` calls, rebalanced and static.
std::pair<double, double> simulateInflation(const MassProfile& mass,
                                            const SearchSpaceParams& params, int iterations,
                                            int late) {
  auto rebalanced = makeExDyna(params);
  auto replica = makeExDyna(params);  // another rank's copy, fed the same counts
  auto fixed = makeExDyna(params);    // never observes: Alg. 2's static partitions
  const int nranks = params.nranks;
  std::vector<uint64_t> counts(nranks), static_counts(nranks);
  double late_rebalanced = 0, late_static = 0;
  uint64_t state = 42;
  for (uint64_t t = 0; t < static_cast<uint64_t>(iterations); ++t) {
    for (int r = 0; r < nranks; ++r) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t per_mille = 900 + (state >> 33) % 201;
      counts[r] = mass.in(rebalanced->rangeFor(r, t)) * per_mille / 1000;
      static_counts[r] = mass.in(fixed->rangeFor(r, t)) * per_mille / 1000;
    }
    rebalanced->observeCounts(counts.data(), t);
    replica->observeCounts(counts.data(), t);
    if (t >= static_cast<uint64_t>(iterations - late)) {
      late_rebalanced += inflation(counts) / late;
      late_static += inflation(static_counts) / late;
    }
  }
  for (size_t p = 0; p < static_cast<size_t>(nranks); ++p) {
    REQUIRE(rebalanced->partition(p) == replica->partition(p));  // identical state on every rank
    REQUIRE(rebalanced->blocksIn(p) >= rebalanced->minBlocks());
  }
  return {late_rebalanced, late_static};
}

TEST_CASE("exdyna rebalancing lowers the all-gather inflation on a skewed load", "[partition]") {
  SearchSpaceParams params;
  params.count = 1 << 20;
  params.nranks = 8;
  // A heavy first partition (4x), and a smooth decay like layer-dependent gradient magnitudes.
  const MassProfile step(params.count, [](double x) -> uint64_t { return x < 0.125 ? 4 : 1; });
  const MassProfile decay(params.count, [](double x) -> uint64_t {
    return static_cast<uint64_t>(std::lround(1 + 4 * std::exp(-8 * x)));
  });
  for (const MassProfile* mass : {&step, &decay}) {
    const auto [rebalanced, fixed] = simulateInflation(*mass, params, 3000, 500);
    INFO("f(t) static " << fixed << " rebalanced " << rebalanced);
    REQUIRE(fixed > 2.0);
    REQUIRE(rebalanced < 1.3);
    REQUIRE(rebalanced < 0.5 * fixed);
  }
}

TEST_CASE("search space parameters are checked and named", "[partition]") {
  auto rejects = [](const std::string& name, const SearchSpaceParams& params, const char* knob) {
    std::unique_ptr<SearchSpace> space;
    REQUIRE(sccl::makeSearchSpace(name, params, &space) == scclInvalidArgument);
    REQUIRE(space == nullptr);
    INFO(sccl::threadLastError());
    REQUIRE(sccl::threadLastError().find(knob) != std::string::npos);
  };
  SearchSpaceParams good;
  good.count = 1000;
  good.nranks = 4;
  rejects("striped", good, "striped");
  auto with = [&good](auto change) {
    SearchSpaceParams p = good;
    change(p);
    return p;
  };
  rejects("micro", with([](SearchSpaceParams& p) { p.nranks = 0; }), "nranks");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.num_blocks = 0; }), "num_blocks");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.num_blocks = -4; }), "num_blocks");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.block_align = 0; }), "block_align");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.rebalance_alpha = 1.0; }), "rebalance_alpha");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.rebalance_alpha = 0.5; }), "rebalance_alpha");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.rebalance_move_blocks = 0; }),
          "rebalance_move_blocks");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.min_blocks_factor = -0.1; }),
          "min_blocks_factor");
  rejects("exdyna", with([](SearchSpaceParams& p) { p.min_blocks_factor = 1.5; }),
          "min_blocks_factor");
  std::unique_ptr<SearchSpace> space;
  REQUIRE(sccl::makeSearchSpace("exdyna", good, nullptr) == scclInvalidArgument);
  REQUIRE(sccl::searchSpaceRegistry().size() == 4);
  for (const auto& entry : sccl::searchSpaceRegistry()) {
    REQUIRE(sccl::makeSearchSpace(entry.name, good, &space) == scclSuccess);
    REQUIRE(std::string(space->name()) == entry.name);
  }
}

}  // namespace
