// EventGraD over MPI one-sided windows on every rank of the job (mpiexec -n 1..4): with
// thresholds zero it is D-PSGD exactly and with adaptive thresholds it matches the independent
// model of support/event_reference.h bitwise; an MPI window read never returns a torn tensor while
// a peer keeps putting; the model average is the rank-order mean; an asymmetric graph fails on
// every rank and leaves the communicator usable.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "mpi_test_support.h"
#include "sparsecoll/sparsecoll.h"
#include "support/event_reference.h"
#include "transports/slot_window.h"

using namespace sccl_mpi_test;

namespace {

const std::vector<size_t> kSizes = {9, 250, 1, 40};

struct MpiComm {
  scclComm_t comm = nullptr;
  MpiComm() { REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess); }
  ~MpiComm() { scclCommDestroy(comm); }
};

template <typename T>
void checkAgainstModel(const sccl_test::EventModelConfig& model_config, int passes) {
  const int rank = worldRank(), nranks = worldSize();
  const uint64_t seed = 77;
  const double lr = 0.05;
  std::vector<std::vector<int>> graph;
  for (int r = 0; r < nranks; ++r) graph.push_back(sccl_test::ringNeighbours(r, nranks));
  sccl_test::EventModel<T> model(model_config, nranks, graph, kSizes, seed, lr);
  for (int p = 0; p < passes; ++p) model.pass();

  MpiComm c;
  scclEventConfig_t config = sccl_test::toEventConfig(model_config);
  const scclDataType_t dtype = sizeof(T) == 4 ? scclFloat32 : scclFloat64;
  scclEventComm_t ec = nullptr;
  REQUIRE(scclEventCommCreate(&ec, c.comm, model.count(), dtype, kSizes.data(),
                              static_cast<int>(kSizes.size()), nullptr, 0, nullptr,
                              &config) == scclSuccess);
  std::vector<T> x(model.count());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<T>(sccl_test::initialParam(seed, rank, i));
  for (int p = 0; p < passes; ++p) {
    sccl_test::EventModel<T>::gradientStep(x.data(), x.size(), seed, rank, uint64_t(p), lr);
    REQUIRE(scclEventCommStep(ec, x.data(), x.size(), dtype, nullptr) == scclSuccess);
  }
  INFO("rank " << rank << " of " << nranks);
  CHECK(std::memcmp(x.data(), model.params(rank).data(), x.size() * sizeof(T)) == 0);
  std::vector<uint64_t> events(kSizes.size());
  REQUIRE(scclEventCommGetTensorStats(ec, events.data(), nullptr, int(kSizes.size())) ==
          scclSuccess);
  for (size_t t = 0; t < kSizes.size(); ++t) CHECK(events[t] == model.events(rank, t));
  REQUIRE(scclEventCommDestroy(ec) == scclSuccess);
}

}  // namespace

TEST_CASE("mpi event communicator with threshold zero is D-PSGD exactly", "[mpi][event]") {
  sccl_test::EventModelConfig zero;
  zero.adaptive = false;
  zero.initial_passes = 0;
  checkAgainstModel<float>(zero, 15);
  sccl_test::EventModelConfig horizon_zero;
  horizon_zero.horizon = 0.0;
  checkAgainstModel<double>(horizon_zero, 8);
}

TEST_CASE("mpi event communicator matches the model with adaptive thresholds", "[mpi][event]") {
  sccl_test::EventModelConfig adaptive;
  adaptive.initial_passes = 3;
  checkAgainstModel<float>(adaptive, 40);
  adaptive.average_differences = true;
  adaptive.max_silent_passes = 6;
  checkAgainstModel<float>(adaptive, 30);
}

TEST_CASE("mpi window slot reads never accept a torn tensor", "[mpi][event]") {
  const int rank = worldRank(), nranks = worldSize();
  MpiComm c;
  constexpr size_t kWords = 16384;  // 128 KiB payloads
  constexpr uint64_t kWrites = 400;
  const sccl::SlotRegion region({kWords * 8, 24});
  std::unique_ptr<sccl::Window> window;
  REQUIRE(c.comm->transport->createWindow(region.bytes(), &window) == scclSuccess);
  auto pattern = [](uint64_t v, size_t i) { return v * 0x9e3779b97f4a7c15ull + i; };
  if (nranks >= 2 && rank == 0) {
    std::vector<uint64_t> payload(kWords), small(3);
    for (uint64_t v = 1; v <= kWrites; ++v) {
      for (size_t i = 0; i < kWords; ++i) payload[i] = pattern(v, i);
      for (size_t i = 0; i < 3; ++i) small[i] = pattern(v, i);
      // Both slots in one epoch, the small one every other write.
      sccl::SlotWrite w[2] = {{0, payload.data(), v, v}, {1, small.data(), (v + 1) / 2, v}};
      REQUIRE(sccl::writeSlots(*window, 1, 0, region, w, v % 2 == 1 ? 2 : 1) == scclSuccess);
    }
  } else if (nranks >= 2 && rank == 1) {
    std::vector<uint64_t> out(kWords), small(3);
    void* outs[2] = {out.data(), small.data()};
    uint64_t last = 0, torn = 0, accepted = 0;
    sccl::SlotReadStats stats;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (last < kWrites && std::chrono::steady_clock::now() < deadline) {
      sccl::SlotCopy held[2];
      REQUIRE(window->lock(1) == scclSuccess);
      scclResult_t r =
          sccl::readSlots(*window, 0, region, UINT64_MAX, outs, held, &stats, deadline);
      REQUIRE(window->unlock(1) == scclSuccess);
      REQUIRE(r == scclSuccess);
      if (held[0].version == 0) continue;
      REQUIRE(held[0].version >= last);
      last = held[0].version;
      ++accepted;
      for (size_t i = 0; i < kWords; ++i) {
        if (out[i] != pattern(held[0].pass, i)) {
          ++torn;
          break;
        }
      }
      for (size_t i = 0; i < 3 && held[1].version > 0; ++i)
        torn += small[i] != pattern(held[1].pass, i);
    }
    INFO("accepted " << accepted << ", retried " << stats.retries);
    CHECK(torn == 0);
    CHECK(last == kWrites);
  }
  REQUIRE(scclBarrier(c.comm) == scclSuccess);
  window.reset();  // collective MPI_Win_free
}

TEST_CASE("mpi event communicator averages the model and rejects an asymmetric graph",
          "[mpi][event]") {
  const int rank = worldRank(), nranks = worldSize();
  MpiComm c;
  const size_t sizes[] = {3, 4};
  scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
  scclEventComm_t ec = nullptr;
  if (nranks >= 3) {
    const int one_way[] = {(rank + 1) % nranks};
    CHECK(scclEventCommCreate(&ec, c.comm, 7, scclFloat32, sizes, 2, one_way, 1, nullptr,
                              &config) == scclInvalidUsage);
    CHECK(std::string(scclGetLastError(c.comm)).find("not symmetric") != std::string::npos);
    CHECK(ec == nullptr);
  }
  REQUIRE(scclEventCommCreate(&ec, c.comm, 7, scclFloat32, sizes, 2, nullptr, 0, nullptr,
                              &config) == scclSuccess);
  std::vector<float> x(7), avg(7);
  for (size_t i = 0; i < 7; ++i) x[i] = 0.25f * float(rank) + float(i);
  REQUIRE(scclEventCommAverageModel(ec, x.data(), avg.data(), 7, scclFloat32, nullptr) ==
          scclSuccess);
  for (size_t i = 0; i < 7; ++i) {
    float sum = 0.0f;
    for (int r = 0; r < nranks; ++r) sum += 0.25f * float(r) + float(i);
    CHECK(avg[i] == sum / float(nranks));
  }
  REQUIRE(scclEventCommDestroy(ec) == scclSuccess);
}

TEST_CASE("mpi event communicator continues bit for bit after loading its checkpoint",
          "[mpi][event][checkpoint]") {
  // Loaded into the running event communicator, whose MPI windows hold later passes' copies: the
  // load puts the held copies back into the own window (a put to this rank over MPI RMA).
  const int rank = worldRank();
  const uint64_t seed = 91;
  const double lr = 0.05;
  MpiComm c;
  scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
  config.initialPasses = 2;
  config.thresholdMode = scclEventThresholdStatic;
  config.staticThreshold = 0.02;
  const size_t count = 9 + 250 + 1 + 40;
  scclEventComm_t ec = nullptr;
  REQUIRE(scclEventCommCreate(&ec, c.comm, count, scclFloat32, kSizes.data(),
                              static_cast<int>(kSizes.size()), nullptr, 0, nullptr,
                              &config) == scclSuccess);
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) x[i] = float(sccl_test::initialParam(seed, rank, i));
  auto run = [&](uint64_t first, int passes) {
    for (int p = 0; p < passes; ++p) {
      sccl_test::EventModel<float>::gradientStep(x.data(), count, seed, rank, first + uint64_t(p),
                                                 lr);
      REQUIRE(scclEventCommStep(ec, x.data(), count, scclFloat32, nullptr) == scclSuccess);
    }
  };
  run(0, 6);
  size_t bytes = 0;
  REQUIRE(scclEventCommGetStateSize(ec, &bytes) == scclSuccess);
  std::vector<unsigned char> blob(bytes);
  REQUIRE(scclEventCommExportState(ec, blob.data(), bytes, nullptr) == scclSuccess);
  const std::vector<float> saved = x;
  run(6, 8);
  const std::vector<float> whole = x;
  std::vector<uint64_t> events_whole(kSizes.size()), events_again(kSizes.size());
  REQUIRE(scclEventCommGetTensorStats(ec, events_whole.data(), nullptr, int(kSizes.size())) ==
          scclSuccess);
  REQUIRE(scclEventCommImportState(ec, blob.data(), bytes) == scclSuccess);
  x = saved;
  run(6, 8);
  REQUIRE(scclEventCommGetTensorStats(ec, events_again.data(), nullptr, int(kSizes.size())) ==
          scclSuccess);
  INFO("rank " << rank);
  CHECK(std::memcmp(x.data(), whole.data(), count * sizeof(float)) == 0);
  CHECK(events_again == events_whole);
  REQUIRE(scclEventCommDestroy(ec) == scclSuccess);
}
