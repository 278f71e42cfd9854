// The device-resident sync_free call (algorithms/resident_sync_free.cc) on the fake device
// (support/fake_device.h): micro_sync_free and exdyna_sync_free must give the host run's outputs
// and residuals bit for bit at 1-4 ranks and for every gradient type, with collectives on the
// stream (as NCCL's) and staged over the host transport, with swapped and with fixed buffers;
// read nothing back (staged: one wait per collective); allocate and wait nothing while captured;
// apply the non-finite policies; and answer hostile peers with NaN on every rank, the residual
// kept and the sticky fault word set.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/resident_sync_free.h"
#include "core/collective_bytes.h"
#include "kernels/shared/sync_free_async_fault.h"
#include "kernels/kernels.h"
#include "kernels/shared/sync_free_call.h"
#include "sparsifier/sparsifier.h"
#include "support/fake_device.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"
#include "support/typed_sparse_runs.h"
#include "support/typed_values.h"

using namespace sccl_test;

namespace {

enum class Collectives { OnStream, Staged };

struct CallCounts {
  uint64_t to_host = 0, to_device = 0, waits = 0;
  uint64_t fault = 0;  // the sticky fault word after the call
};

struct FakeSyncFreeRun {
  std::vector<std::vector<TypedRankCall>> calls;  // [call][rank]
  std::vector<std::vector<CallCounts>> counts;    // [call][rank]
  std::vector<std::string> failures;
  std::vector<std::string> violations;
  std::vector<scclSparseStats_t> stats;  // per rank, after the last call
  std::vector<scclResult_t> async;       // per rank: the async error after the last call
};

// tamper(call, collective of that call, received bytes' view, bytes): a hostile peer, on every
// rank alike.
using Tamper = std::function<void(int, size_t, void*, size_t)>;

struct FakeOptions {
  Collectives how = Collectives::OnStream;
  bool fixed_buffers = false;
  bool capture_after_first = false;  // calls 1.. are made in capture mode
  scclDataType_t dtype = scclFloat32;
  scclRedOp_t op = scclSum;
  Tamper tamper;
  // Not null: after the calls, each rank's checkpoint as scclSparsifierExportState writes it for a
  // device sparsifier (the device's words into the host's objects, the device residual).
  std::vector<std::vector<unsigned char>>* checkpoints = nullptr;
};

FakeSyncFreeRun runOnFake(int nranks, size_t count, const scclSparseConfig_t& config,
                          int iterations, const TypedGradientFn& gradient,
                          const FakeOptions& options) {
  FakeSyncFreeRun run;
  const scclDataType_t dtype = options.dtype;
  run.calls.assign(size_t(iterations), std::vector<TypedRankCall>(size_t(nranks)));
  run.counts.assign(size_t(iterations), std::vector<CallCounts>(size_t(nranks)));
  run.stats.resize(size_t(nranks));
  run.async.assign(size_t(nranks), scclSuccess);
  const size_t element = sccl::dataTypeSize(dtype);
  const scclDataType_t acc_dtype = dtype == scclFloat64 ? scclFloat64 : scclFloat32;
  const size_t acc_bytes = count * sccl::dataTypeSize(acc_dtype);
  std::vector<std::vector<std::string>> violations(static_cast<size_t>(nranks));
  run.failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, dtype, &config), scclSuccess,
                         "scclSparsifierCreate"))
      return;
    FakeDevice device;
    installFakeDeviceTransport(comm, device);
    FakeKernels kernels(device);
    FakeStaging staging(device);
    void* residual = device.allocate(acc_bytes);
    void* acc = device.allocate(acc_bytes);
    void* grad = device.allocate(count * element);
    void* out = device.allocate(count * element);
    std::memset(device.view(residual), 0, acc_bytes);
    uint64_t fault = 0;  // host memory the kernels write (mapped page-locked memory on CUDA)
    sccl::ResidentSyncFree state;
    const sccl::ReductionContext prepared = sccl::reductionContext(*sp);
    if (!log.checkResult(sccl::prepareResidentSyncFree(
                             prepared, staging, sccl::residentSyncFreeCapacity(prepared), &fault,
                             &fault, options.fixed_buffers, false, &state),
                         scclSuccess, "prepareResidentSyncFree"))
      return;
    device.wait();
    sccl::StagedVectors vectors{residual, acc, nullptr, nullptr, nullptr};
    FakeStreamExchange on_stream(device);
    sccl::StagedExchange staged(staging);
    int current_call = 0;
    if (options.tamper) {
      on_stream.tamper = [&](size_t number, void* data, size_t n) {
        options.tamper(current_call, number, data, n);
      };
    }
    sccl::StreamExchange& exchange = options.how == Collectives::OnStream
                                         ? static_cast<sccl::StreamExchange&>(on_stream)
                                         : static_cast<sccl::StreamExchange&>(staged);
    for (int t = 0; t < iterations; ++t) {
      current_call = t;
      on_stream.collectives = 0;
      for (size_t i = 0; i < count; ++i) {
        storeValue(dtype, device.view(grad), i, gradient(rank, uint64_t(t), i));
        storeValue(dtype, device.view(out), i, 12345.0);
      }
      sccl::applyCallDensity(*sp);  // as scclSparseAllreduce does first (a warm-up's step)
      const sccl::ReductionContext ctx = sccl::reductionContext(*sp);
      sccl::SparseCall call;
      call.ctx = &ctx;
      call.sendbuf = grad;
      call.recvbuf = out;
      call.op = options.op;
      call.kernels = &kernels;
      call.device = &staging;
      call.stream = nullptr;
      if (options.capture_after_first && t > 0) device.beginCapture();
      const DeviceCounters before = device.counters;
      TypedRankCall& record = run.calls[size_t(t)][size_t(rank)];
      record.result = sccl::runResidentSyncFree(call, exchange, state, vectors);
      CallCounts& c = run.counts[size_t(t)][size_t(rank)];
      c.to_host = device.counters.to_host - before.to_host;
      c.to_device = device.counters.to_device - before.to_device;
      c.waits = device.counters.waits - before.waits;
      device.endCapture();
      device.wait();  // the caller's stream synchronisation before it reads recvbuf
      c.fault = fault;
      if (record.result == scclSuccess) ++sp->iteration;
      const auto* o = static_cast<const unsigned char*>(device.view(out));
      record.output.assign(o, o + count * element);
      record.residual.resize(count);
      for (size_t i = 0; i < count; ++i)
        record.residual[i] = loadValue(acc_dtype, device.view(vectors.residual), i);
      if (record.result != scclSuccess) break;
    }
    if (log.checkResult(
            sccl::residentSyncFreeStats(sccl::reductionContext(*sp), staging, state, &sp->stats),
            scclSuccess, "stats")) {
      run.stats[size_t(rank)] = sp->stats;
    }
    log.checkResult(sccl::residentSyncFreeAsyncError(state, &run.async[size_t(rank)]), scclSuccess,
                    "async error");
    if (options.checkpoints != nullptr) {
      uint64_t call_number = 0;
      if (log.checkResult(sccl::residentSyncFreeCheckpointState(sccl::reductionContext(*sp),
                                                                staging, state, &call_number),
                          scclSuccess, "checkpoint state")) {
        // What deviceCheckpointState and deviceExportResidual give the blob.
        sp->iteration = call_number;
        std::memcpy(sp->residual.data(), device.view(vectors.residual), acc_bytes);
        std::vector<unsigned char>& blob = (*options.checkpoints)[size_t(rank)];
        size_t bytes = 0, written = 0;
        log.checkResult(scclSparsifierGetStateSize(sp, &bytes), scclSuccess, "state size");
        blob.resize(bytes);
        log.checkResult(scclSparsifierExportState(sp, blob.data(), bytes, &written), scclSuccess,
                        "export");
      }
    }
    violations[size_t(rank)] = device.violations;
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "scclSparsifierDestroy");
  });
  for (auto& v : violations) run.violations.insert(run.violations.end(), v.begin(), v.end());
  return run;
}

TypedGradientFn skewed(uint32_t seed) {
  return [seed](int r, uint64_t t, size_t i) {
    return double(gradientValue(seed, r, t, i)) * (i < 3000 ? 6.0 : 1.0);
  };
}

void requireSameAsHost(const char* preset, int nranks, size_t count, const FakeOptions& options,
                       int iterations, const TypedGradientFn& gradient) {
  INFO(preset << ", " << nranks << " ranks, dtype " << int(options.dtype)
              << (options.how == Collectives::OnStream ? ", on the stream" : ", staged")
              << (options.fixed_buffers ? ", fixed buffers" : ", swapped buffers") << ", op "
              << int(options.op));
  const scclSparseConfig_t config = sparseConfig(preset, 0.01);
  TypedSparseRun host =
      runTypedSparse(nranks, count, options.dtype, config, iterations, gradient, options.op);
  FakeSyncFreeRun fake = runOnFake(nranks, count, config, iterations, gradient, options);
  REQUIRE_NO_RANK_FAILURES(host.failures);
  REQUIRE_NO_RANK_FAILURES(fake.failures);
  CHECK(fake.violations.empty());
  for (size_t t = 0; t < size_t(iterations); ++t) {
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("call " << t << " rank " << r);
      const TypedRankCall& want = host.calls[t][r];
      const TypedRankCall& got = fake.calls[t][r];
      REQUIRE(want.result == scclSuccess);
      REQUIRE(got.result == scclSuccess);
      CHECK(got.output == want.output);
      CHECK(std::memcmp(got.residual.data(), want.residual.data(), count * sizeof(double)) == 0);
    }
  }
  for (size_t r = 0; r < size_t(nranks); ++r) {
    CHECK(fake.async[r] == scclSuccess);
    CHECK(fake.stats[r].iteration == uint64_t(iterations));
  }
}

}  // namespace

TEST_CASE("resident sync free equals the host run bit for bit", "[resident_sync_free]") {
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    for (int nranks : {1, 2, 3, 4}) {
      FakeOptions options;
      requireSameAsHost(preset, nranks, 20011, options, 6, skewed(41));
      options.how = Collectives::Staged;
      options.op = scclAvg;
      requireSameAsHost(preset, nranks, 20011, options, 4, skewed(43));
      options.how = Collectives::OnStream;
      options.fixed_buffers = true;
      requireSameAsHost(preset, nranks, 20011, options, 4, skewed(47));
    }
  }
}

TEST_CASE("a checkpoint of resident sync free calls resumes on host buffers bit for bit",
          "[resident_sync_free][checkpoint]") {
  // The threshold, ExDyna's partitions and the call number live in the device's words; the
  // checkpoint takes them from there (residentSyncFreeCheckpointState) with the device residual,
  // and a sparsifier that loads it continues as the uninterrupted host run.
  const size_t count = 20011;
  const int nranks = 3, before = 24, after = 5;
  const TypedGradientFn gradient = skewed(53);
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    INFO(preset);
    scclSparseConfig_t config = sparseConfig(preset, 0.01);
    config.threshold = 3.0;  // near where the scaling settles: counts under the cap, which differ
    const TypedSparseRun whole =
        runTypedSparse(nranks, count, scclFloat32, config, before + after, gradient);
    REQUIRE_NO_RANK_FAILURES(whole.failures);
    std::vector<std::vector<unsigned char>> blobs(static_cast<size_t>(nranks));
    FakeOptions options;
    options.checkpoints = &blobs;
    const FakeSyncFreeRun fake = runOnFake(nranks, count, config, before, gradient, options);
    REQUIRE_NO_RANK_FAILURES(fake.failures);
    const auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config),
                           scclSuccess, "create"))
        return;
      const std::vector<unsigned char>& blob = blobs[size_t(rank)];
      if (!log.checkResult(scclSparsifierImportState(sp, blob.data(), blob.size()), scclSuccess,
                           "import"))
        return;
      std::vector<float> grad(count), out(count);
      for (int t = before; t < before + after; ++t) {
        for (size_t i = 0; i < count; ++i) grad[i] = float(gradient(rank, uint64_t(t), i));
        log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum,
                                            sp, comm, nullptr),
                        scclSuccess, "call after the load");
        const std::vector<unsigned char>& want = whole.calls[size_t(t)][size_t(rank)].output;
        log.check(want.size() == count * sizeof(float) &&
                      std::memcmp(want.data(), out.data(), want.size()) == 0,
                  "call " + std::to_string(t) + ": the uninterrupted host run's output");
        scclSparseStats_t stats{};
        stats.size = sizeof(stats);
        log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "stats");
        const scclSparseStats_t& host = whole.calls[size_t(t)][size_t(rank)].stats;
        log.check(stats.iteration == host.iteration && stats.kGlobal == host.kGlobal &&
                      stats.kLocal == host.kLocal &&
                      std::memcmp(&stats.threshold, &host.threshold, sizeof(double)) == 0,
                  "call " + std::to_string(t) + ": the host run's call number, counts, threshold");
      }
      scclSparsifierDestroy(sp);
    });
    REQUIRE_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("resident sync free equals the host run for every gradient type",
          "[resident_sync_free]") {
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    FakeOptions options;
    options.dtype = dtype;
    options.op = scclAvg;
    requireSameAsHost("micro_sync_free", 3, 9001, options, 4, skewed(53));
    options.how = Collectives::Staged;
    requireSameAsHost("exdyna_sync_free", 2, 9001, options, 4, skewed(59));
  }
}

TEST_CASE("resident sync free equals the host run through a density warm-up",
          "[resident_sync_free]") {
  // The slots are sized for the warm-up's start; every call keeps what the host keeps at the
  // density in effect (more padding on the wire, the same entries).
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    scclSparseConfig_t config = sparseConfig(preset, 0.01);
    config.densityWarmupStart = 0.05;
    config.densityWarmupCalls = 4;
    const scclDataType_t dtype = scclFloat32;
    TypedSparseRun host = runTypedSparse(3, 20011, dtype, config, 7, skewed(89), scclSum);
    FakeSyncFreeRun fake = runOnFake(3, 20011, config, 7, skewed(89), FakeOptions{});
    REQUIRE_NO_RANK_FAILURES(host.failures);
    REQUIRE_NO_RANK_FAILURES(fake.failures);
    for (size_t t = 0; t < 7; ++t) {
      for (size_t r = 0; r < 3; ++r) {
        INFO(preset << " call " << t << " rank " << r);
        REQUIRE(fake.calls[t][r].result == scclSuccess);
        CHECK(fake.calls[t][r].output == host.calls[t][r].output);
        CHECK(std::memcmp(fake.calls[t][r].residual.data(), host.calls[t][r].residual.data(),
                          20011 * sizeof(double)) == 0);
      }
    }
  }
}

TEST_CASE("resident sync free reads nothing back and waits only for staged collectives",
          "[resident_sync_free]") {
  const scclSparseConfig_t config = sparseConfig("exdyna_sync_free", 0.01);
  for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
    for (int nranks : {1, 3}) {
      INFO((how == Collectives::OnStream ? "on the stream" : "staged")
           << ", " << nranks << " ranks");
      FakeOptions options;
      options.how = how;
      FakeSyncFreeRun run = runOnFake(nranks, 12007, config, 4, skewed(61), options);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      CHECK(run.violations.empty());
      for (size_t t = 0; t < 4; ++t) {
        for (size_t r = 0; r < size_t(nranks); ++r) {
          INFO("call " << t << " rank " << r);
          const CallCounts& c = run.counts[t][r];
          if (how == Collectives::OnStream) {
            CHECK(c.to_host == 0);
            CHECK(c.waits == 0);
            CHECK(c.to_device == 0);
          } else {
            // Each of the two collectives: its send bytes down, one wait, its receive bytes up.
            CHECK(c.to_host == 2);
            CHECK(c.waits == 2);
            CHECK(c.to_device == 2);
          }
        }
      }
    }
  }
}

TEST_CASE("resident sync free calls can be captured: no wait, no allocation",
          "[resident_sync_free]") {
  for (bool fixed : {false, true}) {
    INFO((fixed ? "fixed buffers" : "swapped buffers"));
    FakeOptions options;
    options.fixed_buffers = fixed;
    options.capture_after_first = true;
    FakeSyncFreeRun run =
        runOnFake(2, 12007, sparseConfig("micro_sync_free", 0.01), 4, skewed(67), options);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (const std::string& v : run.violations) INFO(v);
    CHECK(run.violations.empty());
  }
}

TEST_CASE("resident sync free applies the non-finite policies on the device",
          "[resident_sync_free]") {
  const size_t count = 9001;
  const int nranks = 3;
  // Rank 1's gradient holds a NaN at call 1.
  const TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
    if (r == 1 && t == 1 && i == 17) return double(NAN);
    return double(gradientValue(71, r, t, i));
  };
  SECTION("propagate: that call gives NaN on every rank and changes nothing, as on the host") {
    const scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
    TypedSparseRun host = runTypedSparse(nranks, count, scclFloat32, config, 4, gradient, scclSum);
    FakeSyncFreeRun fake = runOnFake(nranks, count, config, 4, gradient, FakeOptions{});
    REQUIRE_NO_RANK_FAILURES(host.failures);
    REQUIRE_NO_RANK_FAILURES(fake.failures);
    for (size_t t = 0; t < 4; ++t) {
      for (size_t r = 0; r < size_t(nranks); ++r) {
        INFO("call " << t << " rank " << r);
        CHECK(fake.calls[t][r].output == host.calls[t][r].output);
        CHECK(std::memcmp(fake.calls[t][r].residual.data(), host.calls[t][r].residual.data(),
                          count * sizeof(double)) == 0);
        CHECK(fake.counts[t][r].fault == 0);
      }
    }
    for (size_t r = 0; r < size_t(nranks); ++r) {
      CHECK(fake.async[r] == scclSuccess);
      CHECK(fake.stats[r].iteration == 3);  // completed calls
    }
  }
  SECTION("error: a sticky scclInvalidArgument naming the rank, NaN from then on") {
    scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
    config.nonFinite = scclNonFiniteError;
    FakeSyncFreeRun fake = runOnFake(nranks, count, config, 4, gradient, FakeOptions{});
    REQUIRE_NO_RANK_FAILURES(fake.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(fake.counts[0][r].fault == 0);
      CHECK(sccl::asyncFaultKind(fake.counts[1][r].fault) == sccl::AsyncFault::NonFinite);
      CHECK(sccl::asyncFaultRank(fake.counts[1][r].fault) == 1);
      CHECK(fake.async[r] == scclInvalidArgument);
      for (size_t t = 1; t < 4; ++t) {
        const auto& out = fake.calls[t][r].output;
        float first = 0;
        std::memcpy(&first, out.data(), sizeof(float));
        CHECK(std::isnan(first));
        CHECK(fake.calls[t][r].residual == fake.calls[0][r].residual);  // nothing else changes
      }
    }
  }
}

TEST_CASE("resident sync free answers a hostile peer with NaN everywhere and a sticky fault",
          "[resident_sync_free]") {
  const size_t count = 20011;
  const int nranks = 3;
  const scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
  const auto slot_words = [](size_t bytes) { return bytes / sizeof(int64_t) / nranks; };
  struct Case {
    const char* what;
    std::function<void(int64_t* words, size_t slot)> edit;
    sccl::AsyncFault fault;
    scclResult_t result;
  };
  const std::vector<Case> cases = {
      {"an index outside its range",
       [](int64_t* w, size_t slot) { w[slot + sccl::kSlotHeaderWords] = -5; },
       sccl::AsyncFault::IndexOutOfRange, scclRemoteError},
      {"indices out of order",
       [](int64_t* w, size_t slot) {
         std::swap(w[slot + sccl::kSlotHeaderWords], w[slot + sccl::kSlotHeaderWords + 1]);
       },
       sccl::AsyncFault::IndexOutOfRange, scclRemoteError},
      {"a count above the capacity", [](int64_t* w, size_t slot) { w[slot] = int64_t(slot) * 4; },
       sccl::AsyncFault::CountAboveCapacity, scclRemoteError},
      {"another call number", [](int64_t* w, size_t slot) { w[slot + 3] += 1; },
       sccl::AsyncFault::OtherCall, scclInvalidUsage},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FakeOptions options;
    options.tamper = [&](int call, size_t collective, void* data, size_t bytes) {
      if (call != 2 || collective != 0) return;  // rank 1's slot of call 2
      c.edit(static_cast<int64_t*>(data), slot_words(bytes));
    };
    FakeSyncFreeRun run = runOnFake(nranks, count, config, 4, skewed(73), options);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.counts[1][r].fault == 0);
      CHECK(sccl::asyncFaultKind(run.counts[2][r].fault) == c.fault);
      CHECK(run.async[r] == c.result);
      for (size_t t = 2; t < 4; ++t) {
        INFO("call " << t);
        CHECK(run.calls[t][r].result == scclSuccess);  // the call only enqueued its work
        float first = 0, last = 0;
        std::memcpy(&first, run.calls[t][r].output.data(), sizeof(float));
        std::memcpy(&last, run.calls[t][r].output.data() + (count - 1) * 4, sizeof(float));
        CHECK(std::isnan(first));
        CHECK(std::isnan(last));
        CHECK(run.calls[t][r].residual == run.calls[1][r].residual);  // the residual kept
      }
    }
  }
}

TEST_CASE("the CPU capped selection keeps the largest, ties to the lowest indices",
          "[resident_sync_free]") {
  // Values on a coarse grid, so that the cut-off has many ties; the definition written plainly.
  const size_t n = 50021;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::round(gradientValue(29, 0, 0, i) * 8.0f) / 8.0f;
  for (size_t capacity : {size_t(1), size_t(17), size_t(3000), size_t(60000)}) {
    for (double threshold : {0.5, 2.0}) {
      const size_t begin = 777, end = 40001;
      INFO("capacity " << capacity << " threshold " << threshold);
      std::vector<std::pair<float, int64_t>> found;
      for (size_t i = begin; i < end; ++i)
        if (!(std::fabs(x[i]) < threshold)) found.emplace_back(std::fabs(x[i]), int64_t(i));
      std::stable_sort(found.begin(), found.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      if (found.size() > capacity) found.resize(capacity);
      std::vector<int64_t> want;
      for (const auto& f : found) want.push_back(f.second);
      std::sort(want.begin(), want.end());
      const std::vector<uint64_t> bounds{begin, end};
      const uint64_t sequence = 7, nonfinite = 3;
      // Kept up to `capacity`, padded to 3 more (a slot sized for a higher density).
      std::vector<int64_t> slot(sccl::kSlotHeaderWords + capacity + 3, 99);
      REQUIRE(sccl::cpuKernels().syncFreeSelect(
                  x.data(), scclFloat32, bounds.data(), end - begin, {}, &threshold, capacity,
                  capacity + 3, &nonfinite, 0xabc, &sequence, slot.data(), nullptr) == scclSuccess);
      REQUIRE(slot[0] == int64_t(want.size()));
      CHECK(slot[1] == 3);
      CHECK(uint64_t(slot[2]) == 0xabc);
      CHECK(slot[3] == 7);
      const std::vector<int64_t> kept(slot.begin() + 4, slot.begin() + 4 + long(want.size()));
      CHECK(kept == want);
      CHECK(std::all_of(slot.begin() + 4 + long(want.size()), slot.end(),
                        [](int64_t v) { return v == -1; }));
      // From the pass's candidates (the range's selection at the threshold): the same slot; with
      // more qualifying than their room, the range is scanned instead (the room's entries alone
      // would lose the rest).
      std::vector<int64_t> candidates(end - begin);
      size_t qualifying = 0;
      REQUIRE(sccl::cpuKernels().selectAbove(x.data(), scclFloat32, begin, end, threshold,
                                             candidates.data(), nullptr, candidates.size(),
                                             &qualifying, nullptr) == scclSuccess);
      for (size_t room : {qualifying, qualifying / 2}) {
        INFO("candidates' room " << room << " of " << qualifying);
        const sccl::SyncFreeCandidates from{candidates.data(), &qualifying, room};
        std::vector<int64_t> again(slot.size(), 99);
        REQUIRE(sccl::cpuKernels().syncFreeSelect(x.data(), scclFloat32, bounds.data(), end - begin,
                                                  from, &threshold, capacity, capacity + 3,
                                                  &nonfinite, 0xabc, &sequence, again.data(),
                                                  nullptr) == scclSuccess);
        CHECK(again == slot);
      }
    }
  }
}

TEST_CASE("resident sync free statistics read from the device are the host run's",
          "[resident_sync_free]") {
  const size_t count = 20011;
  const int nranks = 3, iterations = 5;
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    INFO(preset);
    const scclSparseConfig_t config = sparseConfig(preset, 0.01);
    const GradientFn gradient = [](int r, uint64_t t, size_t i) {
      return gradientValue(83, r, t, i) * (i < 3000 ? 6.0f : 1.0f);
    };
    SparseRun host = runSparse(nranks, count, config, iterations, gradient);
    FakeSyncFreeRun fake = runOnFake(
        nranks, count, config, iterations,
        [&](int r, uint64_t t, size_t i) { return double(gradient(r, t, i)); }, FakeOptions{});
    REQUIRE_NO_RANK_FAILURES(host.failures);
    REQUIRE_NO_RANK_FAILURES(fake.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      const scclSparseStats_t& want = host.calls.back()[r].stats;
      const scclSparseStats_t& got = fake.stats[r];
      CHECK(std::memcmp(&got.threshold, &want.threshold, sizeof(double)) == 0);
      CHECK(got.kLocal == want.kLocal);
      CHECK(got.kGlobal == want.kGlobal);
      CHECK(got.kMax == want.kMax);
      CHECK(got.iteration == want.iteration);
    }
  }
}
