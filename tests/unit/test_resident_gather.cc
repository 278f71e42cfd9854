// The device-resident gather call (algorithms/resident_gather.cc) on the fake device
// (support/fake_device.h, harness support/fake_gather_runs.h): device memory the host cannot
// touch, a stream whose work runs only at waits, and per-call counters. MiCRO, ExDyna and CLT-k
// must give the host run's outputs, residuals and counts bit for bit at 1-4 ranks, with
// collectives on the stream (as NCCL's) and staged over the host transport, read back one plan of
// 64 + 16 n bytes per call and wait once (staged: once more per collective), apply the
// non-finite policies as the host does, and refuse hostile peers on every rank with recvbuf
// untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/async_fault.h"
#include "kernels/shared/sync_free_async_fault.h"
#include "support/fake_gather_runs.h"

using namespace sccl_test;

TEST_CASE("fake device: host access faults are impossible to miss, reads wait for the stream",
          "[fake_device]") {
  FakeDevice device(1 << 20);
  auto* word = static_cast<uint64_t*>(device.allocate(8));
  CHECK(device.isDevice(word));
  CHECK_FALSE(device.isDevice(&device));
  *device.at(word) = 7;  // through the kernels' alias
  FakeStaging staging(device);
  void* host = nullptr;
  REQUIRE(staging.hostBuffer(sccl::DeviceStaging::kPlanHost, 8, &host) == scclSuccess);
  REQUIRE(staging.readBack(host, word, 8) == scclSuccess);
  uint64_t seen = 0;
  std::memcpy(&seen, host, 8);
  CHECK(seen == 0xEEEEEEEEEEEEEEEEull);  // not waited for: poison
  REQUIRE(staging.synchronize() == scclSuccess);
  std::memcpy(&seen, host, 8);
  CHECK(seen == 7);
  CHECK(device.counters.to_host == 1);
  CHECK(device.counters.waits == 1);
  device.beginCapture();
  device.wait();
  device.endCapture();
  CHECK(device.violations.size() == 1);
}

TEST_CASE("resident gather equals the host run bit for bit", "[resident_gather]") {
  const size_t count = 20011;
  for (const char* preset : {"micro", "exdyna"}) {
    for (int nranks : {1, 2, 3, 4}) {
      for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
        requireSameAsHost(preset, nranks, count, sparseConfig(preset, 0.01), 6, skewed(), scclSum,
                          how);
      }
    }
  }
  // Without the density correction (the papers' threshold scaling): the threshold is known
  // before the data and the record counts what each rank selects.
  for (const char* preset : {"micro", "exdyna"}) {
    scclSparseConfig_t papers = sparseConfig(preset, 0.01);
    papers.densityCorrection = "none";
    for (int nranks : {1, 3}) {
      requireSameAsHost(preset, nranks, count, papers, 6, skewed(), scclSum, Collectives::OnStream);
      requireSameAsHost(preset, nranks, count, papers, 6, skewed(), scclSum, Collectives::Staged);
    }
  }
  // CLT-k: the leader's exact top-k (ties to the lowest index) broadcast, resident too.
  for (int nranks : {1, 2, 3, 4}) {
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      requireSameAsHost("cltk", nranks, count, sparseConfig("cltk", 0.01), 6, skewed(), scclSum,
                        how);
    }
  }
  // Ties at the k-th value: magnitudes on a coarse grid.
  GradientFn ties = [](int r, uint64_t t, size_t i) {
    return std::round(gradientValue(5, r, t, i) * 200.0f) / 200.0f;
  };
  requireSameAsHost("cltk with ties", 3, count, sparseConfig("cltk", 0.01), 5, ties, scclAvg,
                    Collectives::OnStream);
  // One rank's whole vector is an exclusive range: the fixed threshold runs resident there.
  requireSameAsHost("hard_threshold", 1, count, sparseConfig("hard_threshold", 0.01), 5, skewed(),
                    scclSum, Collectives::OnStream);
  requireSameAsHost("micro scclAvg d 0.001", 3, count, sparseConfig("micro", 0.001), 5, skewed(),
                    scclAvg, Collectives::OnStream);
  requireSameAsHost("exdyna scclAvg", 2, count, sparseConfig("exdyna", 0.01), 5, skewed(), scclAvg,
                    Collectives::Staged);
  // A range that selects nothing: most of the vector exactly zero.
  GradientFn sparse_input = [](int r, uint64_t t, size_t i) {
    return i % 997 == 0 ? gradientValue(3, r, t, i) : 0.0f;
  };
  requireSameAsHost("micro on a mostly zero gradient", 4, count, sparseConfig("micro", 0.01), 5,
                    sparse_input, scclSum, Collectives::OnStream);
}

TEST_CASE("resident gather reads back one plan and waits once per call", "[resident_gather]") {
  const size_t count = 20011;
  for (int nranks : {1, 2, 4}) {
    INFO(nranks << " ranks");
    FakeRun on_stream = runOnFake(nranks, count, sparseConfig("micro", 0.01), 4, skewed(), scclSum,
                                  Collectives::OnStream);
    scclSparseConfig_t papers = sparseConfig("exdyna", 0.01);
    papers.densityCorrection = "none";
    FakeRun staged = runOnFake(nranks, count, papers, 4, skewed(), scclSum, Collectives::Staged);
    REQUIRE_NO_RANK_FAILURES(on_stream.failures);
    REQUIRE_NO_RANK_FAILURES(staged.failures);
    REQUIRE(on_stream.resident);
    REQUIRE(staged.resident);
    for (size_t t = 0; t < 4; ++t) {
      for (size_t r = 0; r < size_t(nranks); ++r) {
        INFO("call " << t << " rank " << r);
        // Bytes on the wire: the records (32 + 8 (2 W B + 1) = 4136 bytes with the defaults),
        // the padded indices, the values.
        const RankIteration& call = on_stream.calls[t][r];
        uint64_t max_k = 0;
        for (uint64_t k : call.counts) max_k = std::max(max_k, k);
        uint64_t want_sent = sccl::allGatherWireBytes(4136, nranks).sent;
        if (max_k > 0) want_sent += sccl::allGatherWireBytes(max_k * 8, nranks).sent;
        if (call.stats.kGlobal > 0)
          want_sent += sccl::allReduceWireBytes(call.stats.kGlobal * 4, nranks).sent;
        CHECK(call.stats.bytesSent == want_sent);
        const CallCounts& c = on_stream.counts[t][r];
        CHECK(c.to_host == 1);
        CHECK(c.to_host_bytes == 64 + 16 * uint64_t(nranks));
        CHECK(c.waits == 1);
        CHECK(c.to_device == 1);  // the ranges and the record's header, in one upload
        // Staged: the plan, and each of the three collectives sends its own bytes up and waits.
        const CallCounts& s = staged.counts[t][r];
        CHECK(s.waits == 4);
        CHECK(s.to_host == 4);
      }
    }
    // CLT-k reads nothing back (its sizes are known before the data, the device settles the
    // call): no wait on the stream; staged, one wait per collective it sends from (the leader:
    // records, broadcast, values; the others: records, values).
    FakeRun cltk = runOnFake(nranks, count, sparseConfig("cltk", 0.01), 4, skewed(), scclSum,
                             Collectives::OnStream);
    FakeRun cltk_staged = runOnFake(nranks, count, sparseConfig("cltk", 0.01), 4, skewed(), scclSum,
                                    Collectives::Staged);
    REQUIRE_NO_RANK_FAILURES(cltk.failures);
    REQUIRE_NO_RANK_FAILURES(cltk_staged.failures);
    REQUIRE(cltk.resident);
    for (size_t t = 0; t < 4; ++t) {
      for (size_t r = 0; r < size_t(nranks); ++r) {
        INFO("cltk call " << t << " rank " << r);
        CHECK(cltk.counts[t][r].to_host == 0);
        CHECK(cltk.counts[t][r].waits == 0);
        CHECK(cltk.counts[t][r].to_device == 1);  // the ranges and the record's header
        CHECK(cltk.counts[t][r].async_fault == 0);
        const bool leader = r == t % size_t(nranks);
        CHECK(cltk_staged.counts[t][r].waits == (leader ? 3u : 2u));
      }
    }
  }
}

TEST_CASE("resident gather applies the non-finite policies as the host does", "[resident_gather]") {
  const size_t count = 5003;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    if (r == 1 && t == 2 && i == 17) return std::numeric_limits<float>::infinity();
    if (r == 2 && t == 3 && i == 4000) return std::numeric_limits<float>::quiet_NaN();
    return gradientValue(41, r, t, i);
  };
  requireSameAsHost("micro, propagate", 3, count, sparseConfig("micro", 0.01), 5, gradient, scclSum,
                    Collectives::OnStream);
  scclSparseConfig_t strict = sparseConfig("exdyna", 0.01);
  strict.nonFinite = scclNonFiniteError;
  requireSameAsHost("exdyna, error", 3, count, strict, 4, gradient, scclSum, Collectives::Staged);
  requireSameAsHost("cltk, propagate", 3, count, sparseConfig("cltk", 0.01), 5, gradient, scclSum,
                    Collectives::OnStream);
  // CLT-k reads nothing back: under the error policy the device raises the sticky fault (the call
  // is NaN with the residual kept, as every later call until a reset).
  scclSparseConfig_t cltk_strict = sparseConfig("cltk", 0.01);
  cltk_strict.nonFinite = scclNonFiniteError;
  FakeRun run = runOnFake(3, count, cltk_strict, 4, gradient, scclSum, Collectives::OnStream);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  for (size_t r = 0; r < 3; ++r) {
    INFO("rank " << r);
    CHECK(run.calls[1][r].result == scclSuccess);
    CHECK(run.counts[1][r].async_fault == 0);
    CHECK(run.calls[2][r].result == scclSuccess);
    for (float v : run.calls[2][r].output) CHECK(std::isnan(v));
    CHECK(run.calls[2][r].residual == run.calls[1][r].residual);
    const uint64_t word = run.counts[2][r].async_fault;
    CHECK(sccl::asyncFaultKind(word) == sccl::AsyncFault::NonFinite);
    CHECK(sccl::asyncFaultRank(word) == 1);
    CHECK(sccl::asyncFaultError(word, "cltk") == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find("rank 1 had NaN/Inf") != std::string::npos);
    CHECK(run.calls[3][r].result == scclSuccess);
    for (float v : run.calls[3][r].output) CHECK(std::isnan(v));
    CHECK(run.calls[3][r].residual == run.calls[1][r].residual);
  }
}

TEST_CASE("resident gather refuses a hostile peer on every rank", "[resident_gather]") {
  const size_t count = 20011;
  const int nranks = 3;
  const scclSparseConfig_t config = sparseConfig("micro", 0.01);
  SECTION("an index outside its range: that call leaves recvbuf and the residual, the next fails") {
    FakeRun run = runOnFake(nranks, count, config, 4, skewed(), scclSum, Collectives::OnStream,
                            [](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 2 || collective != 1) return;
                              const size_t slot = bytes / sizeof(int64_t) / nranks;
                              static_cast<int64_t*>(data)[slot] = -5;  // rank 1's first index
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[2][r].result == scclSuccess);
      CHECK(run.calls[2][r].output == std::vector<float>(count, kSentinel));
      CHECK(run.calls[2][r].residual == run.calls[1][r].residual);  // residual kept
      CHECK(run.counts[1][r].published_fault == sccl::kNoIndexFault);
      CHECK(run.counts[2][r].published_fault == 1);  // for scclSparsifierGetAsyncError
      CHECK(run.calls[3][r].result == scclRemoteError);
      CHECK(run.calls[3][r].output == std::vector<float>(count, kSentinel));
    }
  }
  // CLT-k reads nothing back: the device settles a call a hostile peer spoils (recvbuf NaN,
  // the residual kept, the sticky fault raised for scclSparsifierGetAsyncError), and every later
  // call runs on every rank alike and changes nothing.
  const auto require_async_refusal = [&](const FakeRun& run, sccl::AsyncFault fault,
                                         const char* says) {
    REQUIRE_NO_RANK_FAILURES(run.failures);
    CHECK(run.violations.empty());
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[1][r].result == scclSuccess);
      for (float v : run.calls[1][r].output) CHECK(std::isnan(v));
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
      const uint64_t word = run.counts[1][r].async_fault;
      CHECK(sccl::asyncFaultKind(word) == fault);
      CHECK(sccl::asyncFaultRank(word) == 1);  // the leader of call 1
      CHECK(sccl::asyncFaultCall(word) == 1);
      CHECK(sccl::asyncFaultError(word, "cltk") == scclRemoteError);
      CHECK(std::string(scclGetLastError(nullptr)).find(says) != std::string::npos);
      CHECK(run.calls[2][r].result == scclSuccess);
      for (float v : run.calls[2][r].output) CHECK(std::isnan(v));
      CHECK(run.calls[2][r].residual == run.calls[0][r].residual);
      CHECK(run.counts[2][r].async_fault == word);
    }
  };
  SECTION("CLT-k: the leader's broadcast index outside the vector") {
    FakeRun run =
        runOnFake(nranks, count, sparseConfig("cltk", 0.01), 3, skewed(), scclSum,
                  Collectives::OnStream, [](int call, size_t collective, int, void* data, size_t) {
                    if (call != 1 || collective != 1) return;
                    static_cast<int64_t*>(data)[0] = int64_t(count);
                  });
    require_async_refusal(run, sccl::AsyncFault::IndexOutOfRange, "rank 1 sent an index outside");
  }
  SECTION("CLT-k: a leader claiming another count than its top-k (within its range)") {
    // Its count sizes the index broadcast: the receivers' buffers hold the top-k alone.
    for (int64_t change : {5, -5}) {
      INFO("claim changed by " << change);
      FakeRun run = runOnFake(nranks, count, sparseConfig("cltk", 0.01), 3, skewed(), scclSum,
                              Collectives::OnStream,
                              [&](int call, size_t collective, int, void* data, size_t bytes) {
                                if (call != 1 || collective != 0) return;
                                const size_t record = bytes / sizeof(uint64_t) / nranks;
                                // The leader of call 1 is rank 1; its count is its last word.
                                static_cast<uint64_t*>(data)[2 * record - 1] += uint64_t(change);
                              });
      require_async_refusal(run, sccl::AsyncFault::CountAboveCapacity, "rank 1 claimed a count");
    }
  }
  SECTION("indices out of order") {
    FakeRun run = runOnFake(nranks, count, config, 3, skewed(), scclSum, Collectives::OnStream,
                            [](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 1) return;
                              auto* idx = static_cast<int64_t*>(data);
                              const size_t slot = bytes / sizeof(int64_t) / nranks;
                              for (size_t r = 0; r < size_t(nranks); ++r) {
                                int64_t* slice = idx + r * slot;
                                if (slot < 2 || slice[1] < 0) continue;  // fewer than two
                                std::swap(slice[0], slice[1]);
                                return;
                              }
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
      CHECK(run.calls[2][r].result == scclRemoteError);
    }
  }
  SECTION("a record that claims more than the rank's range") {
    FakeRun run = runOnFake(nranks, count, config, 3, skewed(), scclSum, Collectives::OnStream,
                            [](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 0) return;
                              auto* words = static_cast<uint64_t*>(data);
                              const size_t record = bytes / sizeof(uint64_t) / nranks;
                              words[2 * record - 1] = ~uint64_t{0} / 2;  // rank 1's top bin
                              words[2 * record - 2] = ~uint64_t{0} / 2;
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      CHECK(run.calls[1][r].result == scclRemoteError);
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
    }
  }
  SECTION("a record of another call") {
    FakeRun run = runOnFake(nranks, count, config, 3, skewed(), scclSum, Collectives::OnStream,
                            [](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 0) return;
                              const size_t record = bytes / sizeof(uint64_t) / nranks;
                              static_cast<uint64_t*>(data)[2 * record + sccl::kRecordSequence] += 1;
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      CHECK(run.calls[1][r].result == scclInvalidUsage);
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
    }
  }
}

TEST_CASE("resident gather caps each rank at max_density_slack as the host does",
          "[resident_gather]") {
  // max_density_slack (docs/python.md recommends 1.0 with Adam): the plan caps every rank's
  // count, and a rank counted past the cap sends its cap largest entries (from the candidates on
  // the host, by selectTopK on the device); bit for bit the host run, one plan read back.
  const size_t count = 20011;
  for (const char* preset : {"micro", "exdyna"}) {
    for (double slack : {0.0, 1.0}) {
      scclSparseConfig_t config = sparseConfig(preset, 0.01);
      config.maxDensitySlack = slack;
      for (int nranks : {1, 3, 4}) {
        INFO(preset << " slack " << slack << ", " << nranks << " ranks");
        requireSameAsHost(preset, nranks, count, config, 5, skewed(), scclSum,
                          Collectives::OnStream);
      }
      requireSameAsHost(preset, 3, count, config, 4, skewed(), scclAvg, Collectives::Staged);
    }
  }
  scclSparseConfig_t capped = sparseConfig("micro", 0.01);
  capped.maxDensitySlack = 0.0;
  FakeRun run = runOnFake(4, count, capped, 4, skewed(), scclSum, Collectives::OnStream);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  REQUIRE(run.resident);
  CHECK(run.violations.empty());
  // k = 200 over 4 ranks, slack 0: every count at most 50, and some rank at it in every call.
  const uint64_t cap = 50;
  for (size_t t = 0; t < 4; ++t) {
    const std::vector<uint64_t>& counts = run.calls[t][0].counts;
    INFO("call " << t);
    CHECK(*std::max_element(counts.begin(), counts.end()) == cap);
    for (size_t r = 0; r < 4; ++r) {
      INFO("rank " << r);
      CHECK(run.calls[t][r].counts == counts);
      CHECK(run.counts[t][r].to_host == 1);
      CHECK(run.counts[t][r].waits == 1);
    }
  }
}

TEST_CASE("the staged reductions run on the fake device as on the host", "[resident_gather]") {
  // The presets not yet resident go through the staging; on the fake device that checks they
  // never touch device memory from the host and wait before reading what they copied back.
  const size_t count = 20011;
  for (const char* preset : {"s2"}) {
    requireSameAsHost(preset, 3, count, sparseConfig(preset, 0.01), 4, skewed(), scclSum,
                      Collectives::OnStream);
  }
  // A leader that selects alone with a threshold known before the data: not resident (the leader
  // broadcasts its indices), the staged reduction.
  scclSparseConfig_t leader = sparseConfig("cltk", 0.01);
  leader.estimator = "scaling";
  requireSameAsHost("leader with threshold scaling", 3, count, leader, 4, skewed(), scclSum,
                    Collectives::OnStream);
  requireSameAsHost("micro without the resident path", 3, count, sparseConfig("micro", 0.01), 4,
                    skewed(), scclSum, Collectives::Legacy);
}

TEST_CASE("per-call read-backs and waits of every gather and sketch preset on the fake device",
          "[.counts]") {
  // Not a check: the table behind docs/gpu.md's budgets (run by hand:
  // sccl_unit_tests "[.counts]"). Medians over calls 1-3 of rank 0, 20011 float32, density 0.01.
  const size_t count = 20011;
  for (int nranks : {1, 4}) {
    for (const char* preset :
         {"micro", "exdyna", "topk", "cltk", "hard_threshold", "sidco", "s2"}) {
      for (Collectives how : {Collectives::Legacy, Collectives::OnStream, Collectives::Staged}) {
        FakeRun run =
            runOnFake(nranks, count, sparseConfig(preset, 0.01), 4, skewed(), scclSum, how);
        REQUIRE_NO_RANK_FAILURES(run.failures);
        const CallCounts& c = run.counts[2][0];
        const char* path = how == Collectives::Legacy     ? "staged reduction"
                           : !run.resident                ? "staged reduction (not resident)"
                           : how == Collectives::OnStream ? "resident, collectives on the stream"
                                                          : "resident, host transport staged";
        std::printf("| %d | %s | %s | %llu (%llu B) | %llu |\n", nranks, preset, path,
                    static_cast<unsigned long long>(c.to_host),
                    static_cast<unsigned long long>(c.to_host_bytes),
                    static_cast<unsigned long long>(c.waits));
      }
    }
  }
}

TEST_CASE("resident gather equals the host run for every gradient type", "[resident_gather]") {
  // float16 and bfloat16 gradients accumulate into a float32 residual and are written back
  // rounded; float64 runs with a float64 residual (its window and plan on 64-bit patterns).
  const size_t count = 12007;
  TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
    return double(gradientValue(29, r, t, i)) * (i < 3000 ? 4.0 : 1.0);
  };
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    for (const char* preset : {"micro", "exdyna"}) {
      requireTypedSameAsHost(preset, 3, count, dtype, sparseConfig(preset, 0.01), 5, gradient,
                             scclSum, Collectives::OnStream);
    }
    requireTypedSameAsHost("micro scclAvg", 2, count, dtype, sparseConfig("micro", 0.01), 4,
                           gradient, scclAvg, Collectives::Staged);
  }
}

TEST_CASE("resident gather's two-step exchange equals the host run and sends its bytes",
          "[resident_gather]") {
  // Many ranks over a host transport: the bins all-reduced and the headers all-gathered, the
  // host reduction's collectives; outputs bit for bit, and the host's bytes (the host path may
  // all-reduce its bins once more when too few entries lie above its floor edge).
  const size_t count = 20011;
  for (const char* preset : {"micro", "exdyna", "cltk"}) {
    for (int nranks : {2, 8}) {
      requireSameAsHost(preset, nranks, count, sparseConfig(preset, 0.01), 5, skewed(), scclSum,
                        Collectives::TwoStep);
    }
  }
  scclSparseConfig_t papers = sparseConfig("micro", 0.01);
  papers.densityCorrection = "none";
  requireSameAsHost("micro, no correction", 3, count, papers, 5, skewed(), scclAvg,
                    Collectives::TwoStep);
  // 8 ranks staged: two-step by the exchange's own rule.
  requireSameAsHost("exdyna staged", 8, count, sparseConfig("exdyna", 0.01), 4, skewed(), scclSum,
                    Collectives::Staged);
  const int nranks = 4;
  SparseRun host = runSparse(nranks, count, sparseConfig("micro", 0.01), 5, skewed(), scclSum);
  FakeRun fake = runOnFake(nranks, count, sparseConfig("micro", 0.01), 5, skewed(), scclSum,
                           Collectives::TwoStep);
  REQUIRE_NO_RANK_FAILURES(host.failures);
  REQUIRE_NO_RANK_FAILURES(fake.failures);
  const uint64_t second_bins = sccl::allReduceWireBytes(4104, nranks).sent;
  size_t equal = 0;
  for (size_t t = 0; t < 5; ++t) {
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("call " << t << " rank " << r);
      const uint64_t want = host.calls[t][r].stats.bytesSent;
      const uint64_t got = fake.calls[t][r].stats.bytesSent;
      CHECK((got == want || got + second_bins == want));
      equal += got == want;
      CHECK(fake.counts[t][r].to_host == 1);  // the plan alone: the collectives are the stream's
      CHECK(fake.counts[t][r].waits == 1);
    }
  }
  CHECK(equal > 0);
}
