// Every sparse all-reduce preset over the UCX world communicator gives bitwise the output, counts
// and global size that the in-process transport gives for the same gradients (each rank runs the
// whole job on local threads as its reference), since results must not depend on the transport.
// One-sided windows: puts, atomic words and the slot protocol between neighbours.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "support/sparse_runs.h"
#include "transports/slot_window.h"
#include "ucx_test_world.h"

using namespace sccl_ucx_test;

namespace {

float gradient(int rank, uint64_t t, size_t i) {
  return sccl_test::gradientValue(61, rank, t, i);
}

}  // namespace

TEST_CASE("ucx sparse: every preset is bitwise the in-process transport's result",
          "[ucx][sparse]") {
  const World& world = ucxWorld();
  const int calls = 3;
  for (const sccl::PresetEntry& preset : sccl::presetRegistry()) {
    for (size_t count : {size_t(1), size_t(3), size_t(1000), size_t(4099)}) {
      INFO(preset.name << " count " << count << " rank " << world.rank << " of " << world.nranks);
      scclSparseConfig_t config = sccl_test::sparseConfig(preset.name, 0.05);
      sccl_test::SparseRun local =
          sccl_test::runSparse(world.nranks, count, config, calls, gradient);
      REQUIRE(local.failures.empty());
      scclSparsifier_t sp = nullptr;
      REQUIRE(scclSparsifierCreate(&sp, world.comm, count, scclFloat32, &config) == scclSuccess);
      std::vector<float> grad(count), out(count);
      std::vector<uint64_t> counts(size_t(world.nranks));
      for (int t = 0; t < calls; ++t) {
        for (size_t i = 0; i < count; ++i) grad[i] = gradient(world.rank, uint64_t(t), i);
        REQUIRE(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum, sp,
                                    world.comm, nullptr) == scclSuccess);
        const sccl_test::RankIteration& want = local.calls[size_t(t)][size_t(world.rank)];
        CHECK(std::memcmp(out.data(), want.output.data(), count * sizeof(float)) == 0);
        REQUIRE(scclSparsifierGetRankCounts(sp, counts.data(), world.nranks) == scclSuccess);
        CHECK(counts == want.counts);
        scclSparseStats_t stats{};
        stats.size = sizeof(stats);
        REQUIRE(scclSparsifierGetStats(sp, &stats) == scclSuccess);
        CHECK(stats.kGlobal == want.stats.kGlobal);
      }
      CHECK(scclSparsifierDestroy(sp) == scclSuccess);
    }
  }
}

TEST_CASE("ucx window: puts and atomic words reach the neighbour", "[ucx][window]") {
  TestTransport t = makeUcxTransport();
  REQUIRE(t);
  const int n = t->nranks(), me = t->rank(), right = (me + 1) % n, left = (me + n - 1) % n;
  std::unique_ptr<sccl::Window> window;
  REQUIRE(t->createWindow(1 << 16, &window) == scclSuccess);
  REQUIRE(window->bytes() == size_t(1) << 16);
  std::vector<uint8_t> payload(5000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(me * 31 + i);
  CHECK(window->put(right, 64, payload.data(), payload.size()) == scclInvalidUsage);  // no epoch
  REQUIRE(window->lock(right) == scclSuccess);
  CHECK(window->put(right, (1 << 16) - 8, payload.data(), 16) == scclInvalidArgument);
  REQUIRE(window->put(right, 64, payload.data(), payload.size()) == scclSuccess);
  REQUIRE(window->flush(right) == scclSuccess);
  REQUIRE(window->putWord(right, 8, uint64_t(me) + 1000) == scclSuccess);
  REQUIRE(window->unlock(right) == scclSuccess);
  REQUIRE(t->barrier() == scclSuccess);
  REQUIRE(window->lock(me) == scclSuccess);
  uint64_t words[2] = {7, 7};
  REQUIRE(window->readWords(0, 2, words) == scclSuccess);
  CHECK(words[0] == 0);
  CHECK(words[1] == uint64_t(left) + 1000);
  std::vector<uint8_t> got(payload.size());
  REQUIRE(window->read(64, got.data(), got.size()) == scclSuccess);
  bool exact = true;
  for (size_t i = 0; i < got.size(); ++i) exact = exact && got[i] == uint8_t(left * 31 + i);
  CHECK(exact);
  REQUIRE(window->unlock(me) == scclSuccess);
  REQUIRE(t->barrier() == scclSuccess);  // everyone has read before the slots overwrite word 0

  // The slot protocol: ten versions written to the right neighbour, read by it after each.
  sccl::SlotRegion region({40, 4000});
  std::vector<std::vector<float>> tensors(2);
  std::vector<float> in0(10), in1(1000);
  void* outs[2] = {in0.data(), in1.data()};
  sccl::SlotCopy held[2];
  for (uint64_t v = 1; v <= 10; ++v) {
    std::vector<float> a(10, float(me * 100 + v)), b(1000, float(me * 1000 + v));
    sccl::SlotWrite writes[2] = {{0, a.data(), v, v}, {1, b.data(), v, v}};
    REQUIRE(sccl::writeSlots(*window, right, 0, region, writes, 2) == scclSuccess);
    REQUIRE(t->barrier() == scclSuccess);
    REQUIRE(window->lock(me) == scclSuccess);
    sccl::SlotReadStats stats;
    REQUIRE(sccl::readSlots(*window, 0, region, UINT64_MAX, outs, held, &stats,
                            std::chrono::steady_clock::now() + std::chrono::seconds(30)) ==
            scclSuccess);
    REQUIRE(window->unlock(me) == scclSuccess);
    CHECK(held[0].version == v);
    CHECK(held[1].version == v);
    CHECK(in0[9] == float(left * 100 + v));
    CHECK(in1[999] == float(left * 1000 + v));
    REQUIRE(t->barrier() == scclSuccess);
  }
  window.reset();  // collective
  REQUIRE(t->barrier() == scclSuccess);
}
