// The device-resident gather call (algorithms/resident_gather.cc) on the fake device
// (support/fake_device.h): device memory the host cannot touch, a stream whose work runs only at
// waits, and per-call counters. MiCRO and ExDyna must give the host run's outputs, residuals and
// counts bit for bit at 1-4 ranks, with collectives on the stream (as NCCL's) and staged over the
// host transport, read back one plan of 64 + 16 n bytes per call and wait once (staged: once
// more per collective), apply the non-finite policies as the host does, and refuse hostile peers
// on every rank with recvbuf untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/resident_gather.h"
#include "algorithms/resident_union.h"
#include "core/collective_bytes.h"
#include "algorithms/staged_call.h"
#include "kernels/shared/gather_plan.h"
#include "sparsifier/sparsifier.h"
#include "support/fake_device.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"
#include "support/typed_sparse_runs.h"
#include "support/typed_values.h"
#include "support/union_slots.h"

using namespace sccl_test;

namespace {

constexpr float kSentinel = 12345.0f;  // recvbuf before each call: "untouched" is checkable

// OnStream: as NCCL (one all-gather of header + bins); TwoStep: the same collectives on the
// stream in the two-step form; Staged: the host transport (two-step from 8 ranks).
enum class Collectives { OnStream, TwoStep, Staged, Legacy };

struct CallCounts {
  uint64_t to_host = 0, to_host_bytes = 0, to_device = 0, waits = 0;
  uint32_t published_fault = sccl::kNoIndexFault;  // what the host reads after the call
  std::string error;                               // scclGetLastError after a failed call
};

struct FakeRun {
  std::vector<std::vector<RankIteration>> calls;  // [iteration][rank], float32 runs
  std::vector<std::vector<TypedRankCall>> typed;  // [iteration][rank], every run
  std::vector<std::vector<CallCounts>> counts;    // [iteration][rank]
  std::vector<std::string> failures;
  std::vector<std::string> violations;
  bool resident = false;
};

// tamper(call, collective of that call, rank, received bytes' view, bytes): a hostile peer.
using Tamper = std::function<void(int, size_t, int, void*, size_t)>;

// dtype: the gradient's (float32 records output and residual as floats too); the residual is
// float32, or float64 for float64 gradients.
FakeRun runOnFake(int nranks, size_t count, const scclSparseConfig_t& config, int iterations,
                  const TypedGradientFn& gradient, scclRedOp_t op, Collectives how,
                  const Tamper& tamper = nullptr, scclDataType_t dtype = scclFloat32) {
  FakeRun run;
  run.typed.assign(size_t(iterations), std::vector<TypedRankCall>(size_t(nranks)));
  const size_t element = sccl::dataTypeSize(dtype);
  const scclDataType_t acc_dtype = dtype == scclFloat64 ? scclFloat64 : scclFloat32;
  const size_t acc_element = sccl::dataTypeSize(acc_dtype);
  run.calls.assign(size_t(iterations), std::vector<RankIteration>(size_t(nranks)));
  run.counts.assign(size_t(iterations), std::vector<CallCounts>(size_t(nranks)));
  std::vector<std::vector<std::string>> violations(static_cast<size_t>(nranks));
  std::vector<int> resident(size_t(nranks), 0);
  run.failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, dtype, &config), scclSuccess,
                         "scclSparsifierCreate"))
      return;
    resident[size_t(rank)] =
        sccl::residentGatherApplies(*sp) || sccl::residentUnionApplies(*sp) ? 1 : 0;
    FakeDevice device;
    installFakeDeviceTransport(comm, device);
    FakeKernels kernels(device);
    FakeStaging staging(device);
    const size_t bytes = count * element;
    const size_t acc_bytes = count * acc_element;
    void* residual = device.allocate(acc_bytes);
    void* acc = device.allocate(acc_bytes);
    auto* nonfinite = static_cast<uint64_t*>(device.allocate(sizeof(uint64_t)));
    auto* fault = static_cast<uint32_t*>(device.allocate(sizeof(uint32_t)));
    void* grad = device.allocate(bytes);
    void* out = device.allocate(bytes);
    std::memset(device.view(residual), 0, acc_bytes);
    *device.at(fault) = sccl::kNoIndexFault;
    uint32_t published = sccl::kNoIndexFault;  // host memory the kernels publish the fault into
    sccl::StagedVectors vectors{residual, acc, nonfinite, fault, &published};
    FakeStreamExchange on_stream(device);
    on_stream.two_step = how == Collectives::TwoStep;
    sccl::StagedExchange staged(staging);
    int current_call = 0;
    if (tamper) {
      on_stream.tamper = [&](size_t number, void* data, size_t n) {
        tamper(current_call, number, rank, data, n);
      };
    }
    sccl::StreamExchange* exchange = nullptr;
    if (how == Collectives::OnStream || how == Collectives::TwoStep) exchange = &on_stream;
    if (how == Collectives::Staged) exchange = &staged;
    for (int t = 0; t < iterations; ++t) {
      current_call = t;
      on_stream.collectives = 0;
      for (size_t i = 0; i < count; ++i) {
        storeValue(dtype, device.view(grad), i, gradient(rank, uint64_t(t), i));
        storeValue(dtype, device.view(out), i, kSentinel);
      }
      sccl::SparseCall call;
      call.sp = sp;
      call.sendbuf = grad;
      call.recvbuf = out;
      call.op = op;
      const DeviceCounters before = device.counters;
      RankIteration& record = run.calls[size_t(t)][size_t(rank)];
      record.result = sccl::runStagedCall(call, kernels, staging, vectors, nullptr, exchange);
      CallCounts& c = run.counts[size_t(t)][size_t(rank)];
      c.to_host = device.counters.to_host - before.to_host;
      c.to_host_bytes = device.counters.to_host_bytes - before.to_host_bytes;
      c.waits = device.counters.waits - before.waits;
      c.to_device = device.counters.to_device - before.to_device;
      device.wait();  // the caller's stream synchronisation before it reads recvbuf
      c.published_fault = published;
      if (record.result != scclSuccess) c.error = scclGetLastError(nullptr);  // the thread's
      if (record.result == scclSuccess && !call.step_discarded) ++sp->iteration;
      TypedRankCall& typed = run.typed[size_t(t)][size_t(rank)];
      typed.result = record.result;
      const auto* o = static_cast<const unsigned char*>(device.view(out));
      typed.output.assign(o, o + bytes);
      typed.residual.resize(count);
      for (size_t i = 0; i < count; ++i)
        typed.residual[i] = loadValue(acc_dtype, device.view(vectors.residual), i);
      typed.counts = sp->rank_counts;
      if (dtype == scclFloat32) {
        const float* of = static_cast<const float*>(device.view(out));
        record.output.assign(of, of + count);
        const float* r = static_cast<const float*>(device.view(vectors.residual));
        record.residual.assign(r, r + count);
      }
      record.counts = sp->rank_counts;
      record.stats.kGlobal = call.k_global;
      record.stats.bytesSent = call.bytes_sent;
      // An invalid argument leaves the sparsifier usable (the host loop goes on too).
      if (record.result != scclSuccess && record.result != scclInvalidArgument) break;
    }
    violations[size_t(rank)] = device.violations;
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "scclSparsifierDestroy");
  });
  for (auto& v : violations) run.violations.insert(run.violations.end(), v.begin(), v.end());
  run.resident = resident[0] != 0;
  return run;
}

void requireSameAsHost(const char* what, int nranks, size_t count, const scclSparseConfig_t& config,
                       int iterations, const GradientFn& gradient, scclRedOp_t op,
                       Collectives how) {
  INFO(what << ", " << nranks << " ranks, "
            << (how == Collectives::OnStream ? "on the stream"
                : how == Collectives::Staged ? "staged"
                                             : "legacy staging"));
  SparseRun host = runSparse(nranks, count, config, iterations, gradient, op);
  FakeRun fake = runOnFake(nranks, count, config, iterations, gradient, op, how);
  REQUIRE_NO_RANK_FAILURES(host.failures);
  REQUIRE_NO_RANK_FAILURES(fake.failures);
  std::string violations;
  for (const std::string& v : fake.violations) violations += v + "; ";
  INFO("violations: " << violations);
  CHECK(fake.violations.empty());
  for (size_t t = 0; t < size_t(iterations); ++t) {
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("call " << t << " rank " << r);
      const RankIteration& want = host.calls[t][r];
      const RankIteration& got = fake.calls[t][r];
      REQUIRE(got.result == want.result);
      // A failed call leaves recvbuf as it was: the host's holds the call before, ours the
      // sentinel.
      if (want.result == scclSuccess) {
        CHECK(std::memcmp(got.output.data(), want.output.data(), count * 4) == 0);
      }
      CHECK(std::memcmp(got.residual.data(), want.residual.data(), count * 4) == 0);
      CHECK(got.counts == want.counts);
      if (want.result == scclSuccess && !std::isnan(want.output[0])) {
        CHECK(got.stats.kGlobal == want.stats.kGlobal);
      }
    }
  }
}

void requireTypedSameAsHost(const char* what, int nranks, size_t count, scclDataType_t dtype,
                            const scclSparseConfig_t& config, int iterations,
                            const TypedGradientFn& gradient, scclRedOp_t op, Collectives how) {
  INFO(what << ", " << nranks << " ranks, dtype " << int(dtype)
            << (how == Collectives::OnStream ? ", on the stream" : ", staged"));
  TypedSparseRun host = runTypedSparse(nranks, count, dtype, config, iterations, gradient, op);
  FakeRun fake = runOnFake(nranks, count, config, iterations, gradient, op, how, nullptr, dtype);
  REQUIRE_NO_RANK_FAILURES(host.failures);
  REQUIRE_NO_RANK_FAILURES(fake.failures);
  REQUIRE(fake.resident);
  CHECK(fake.violations.empty());
  for (size_t t = 0; t < size_t(iterations); ++t) {
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("call " << t << " rank " << r);
      const TypedRankCall& want = host.calls[t][r];
      const TypedRankCall& got = fake.typed[t][r];
      REQUIRE(got.result == want.result);
      if (want.result == scclSuccess) CHECK(got.output == want.output);
      CHECK(std::memcmp(got.residual.data(), want.residual.data(), count * sizeof(double)) == 0);
      CHECK(got.counts == want.counts);
    }
  }
}

GradientFn skewed() {
  return [](int r, uint64_t t, size_t i) {
    return gradientValue(37, r, t, i) * (i < 4000 ? 6.0f : 1.0f);
  };
}

}  // namespace

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
    // CLT-k: one read-back and one wait on the stream; staged, the leader also reads back and
    // waits for its broadcast, and everyone for the value all-reduce.
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
        CHECK(cltk.counts[t][r].to_host == 1);
        CHECK(cltk.counts[t][r].to_host_bytes == 64 + 16 * uint64_t(nranks));
        CHECK(cltk.counts[t][r].waits == 1);
        const bool leader = r == t % size_t(nranks);
        CHECK(cltk_staged.counts[t][r].waits == (leader ? 4u : 3u));
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
  SECTION("CLT-k: the leader's broadcast index outside the vector") {
    FakeRun run =
        runOnFake(nranks, count, sparseConfig("cltk", 0.01), 3, skewed(), scclSum,
                  Collectives::OnStream, [](int call, size_t collective, int, void* data, size_t) {
                    if (call != 1 || collective != 1) return;
                    static_cast<int64_t*>(data)[0] = int64_t(count);
                  });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[1][r].result == scclSuccess);
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
      CHECK(run.counts[1][r].published_fault == 1);  // the leader of call 1
      CHECK(run.calls[2][r].result == scclRemoteError);
    }
  }
  SECTION("CLT-k: a leader claiming more than its top-k (within its range)") {
    // Its count sizes the index broadcast: the receivers' buffers hold the top-k alone.
    FakeRun run = runOnFake(nranks, count, sparseConfig("cltk", 0.01), 3, skewed(), scclSum,
                            Collectives::OnStream,
                            [](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 0) return;
                              const size_t record = bytes / sizeof(uint64_t) / nranks;
                              // The leader of call 1 is rank 1; its count is its last word.
                              static_cast<uint64_t*>(data)[2 * record - 1] += 5;
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[1][r].result == scclRemoteError);
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
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

TEST_CASE("resident top-k (the union call) equals the host run bit for bit", "[resident_gather]") {
  // Every rank's exact top-k over the whole vector, the sorted union as the global list.
  const size_t count = 20011;
  const scclSparseConfig_t config = sparseConfig("topk", 0.01);
  for (int nranks : {1, 2, 3, 4}) {
    requireSameAsHost("topk", nranks, count, config, 5, skewed(), scclSum, Collectives::OnStream);
    requireSameAsHost("topk", nranks, count, config, 4, skewed(), scclAvg, Collectives::Staged);
  }
  const TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
    // Coarse values: many ties at the k-th magnitude, broken by index on every rank alike.
    return std::round(double(gradientValue(31, r, t, i)) * 4.0) / 4.0;
  };
  for (scclDataType_t dtype : {scclFloat32, scclFloat16, scclBfloat16, scclFloat64}) {
    requireTypedSameAsHost("topk", 3, 12007, dtype, config, 4, gradient, scclAvg,
                           Collectives::OnStream);
  }
  // A density that selects the whole vector: every rank sends every index.
  requireSameAsHost("topk, density 1", 2, 3001, sparseConfig("topk", 1.0), 3, skewed(), scclSum,
                    Collectives::OnStream);
}

TEST_CASE("resident top-k reads back one plan and waits once per call", "[resident_gather]") {
  const size_t count = 20011;
  for (int nranks : {1, 4}) {
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      INFO(nranks << " ranks, " << (how == Collectives::OnStream ? "on the stream" : "staged"));
      FakeRun run = runOnFake(nranks, count, sparseConfig("topk", 0.01), 4, skewed(), scclSum, how);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      REQUIRE(run.resident);
      CHECK(run.violations.empty());
      for (size_t t = 0; t < 4; ++t) {
        for (size_t r = 0; r < size_t(nranks); ++r) {
          INFO("call " << t << " rank " << r);
          const CallCounts& c = run.counts[t][r];
          // The plan; staged, each of the two collectives' send bytes too (one wait each).
          const uint64_t plan_bytes = 64 + 16 * uint64_t(nranks);
          if (how == Collectives::OnStream) {
            CHECK(c.to_host == 1);
            CHECK(c.to_host_bytes == plan_bytes);
            CHECK(c.waits == 1);
          } else {
            CHECK(c.to_host == 3);
            CHECK(c.waits == 3);
          }
        }
      }
    }
  }
}

TEST_CASE("resident top-k applies the non-finite policies and refuses hostile peers at the call",
          "[resident_gather]") {
  const size_t count = 20011;
  const int nranks = 3;
  SECTION("non-finite values: the host's policies, decided before anything is written") {
    const GradientFn poisoned = [](int r, uint64_t t, size_t i) {
      if (r == 2 && t == 1 && i == 99) return std::numeric_limits<float>::infinity();
      return gradientValue(37, r, t, i);
    };
    requireSameAsHost("topk, propagate", nranks, count, sparseConfig("topk", 0.01), 3, poisoned,
                      scclSum, Collectives::OnStream);
    scclSparseConfig_t error = sparseConfig("topk", 0.01);
    error.nonFinite = scclNonFiniteError;
    requireSameAsHost("topk, error", nranks, count, error, 3, poisoned, scclSum,
                      Collectives::OnStream);
  }
  struct Case {
    const char* what;
    std::function<void(uint64_t* words, size_t slot)> edit;  // rank 1's slot at words + slot
    scclResult_t result;
    const char* says;  // what the error text names
  };
  const std::vector<Case> cases = {
      {"an index outside the vector",
       [](uint64_t* w, size_t slot) { w[slot + sccl::kUnionSlotHeaderWords] = uint64_t(-3); },
       scclRemoteError, "index"},
      {"indices out of order",
       [](uint64_t* w, size_t slot) {
         std::swap(w[slot + sccl::kUnionSlotHeaderWords],
                   w[slot + sccl::kUnionSlotHeaderWords + 1]);
       },
       scclRemoteError, "out of order"},
      {"a count above its slot",
       [](uint64_t* w, size_t slot) { w[slot + sccl::kUnionSlotCount] += 1; }, scclRemoteError,
       "claims"},
      {"a count of 2^64 - 1",
       [](uint64_t* w, size_t slot) { w[slot + sccl::kUnionSlotCount] = ~uint64_t{0}; },
       scclRemoteError, "claims"},
      {"another call", [](uint64_t* w, size_t slot) { w[slot + sccl::kRecordSequence] += 1; },
       scclInvalidUsage, "mismatched"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FakeRun run = runOnFake(nranks, count, sparseConfig("topk", 0.01), 3, skewed(), scclSum,
                            Collectives::OnStream,
                            [&](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 0) return;
                              const size_t slot = bytes / sizeof(uint64_t) / nranks;
                              c.edit(static_cast<uint64_t*>(data), slot);
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    CHECK(run.violations.empty());
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[0][r].result == scclSuccess);
      CHECK(run.calls[1][r].result == c.result);
      CHECK(run.counts[1][r].error.find(c.says) != std::string::npos);
      CHECK(run.counts[1][r].error.find("rank 1") != std::string::npos);
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));  // untouched
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);            // kept
    }
  }
}

TEST_CASE("resident hard threshold and SIDCo (the union call with counts from the data)",
          "[resident_gather]") {
  // The counts come from the data: a record exchange and plan first (one read-back), then the
  // union (the second); SIDCo's estimator reads its fits back as on the staged path.
  const size_t count = 20011;
  for (const char* preset : {"hard_threshold", "sidco"}) {
    for (int nranks : {1, 2, 3, 4}) {
      requireSameAsHost(preset, nranks, count, sparseConfig(preset, 0.01), 4, skewed(), scclSum,
                        Collectives::OnStream);
      requireSameAsHost(preset, nranks, count, sparseConfig(preset, 0.01), 3, skewed(), scclAvg,
                        Collectives::Staged);
    }
  }
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    const TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
      return double(gradientValue(43, r, t, i)) * (i < 2000 ? 5.0 : 1.0);
    };
    requireTypedSameAsHost("hard_threshold", 3, 12007, dtype, sparseConfig("hard_threshold", 0.01),
                           3, gradient, scclAvg, Collectives::OnStream);
  }
  // The other threshold estimators over the whole vector take the same call; DGC, whose count
  // is trimmed at the calls its sample says so (a choice per call and rank), keeps the staged
  // reduction, where the ranks cannot take different collectives.
  for (const char* estimator : {"dgc", "redsync", "gaussiank"}) {
    scclSparseConfig_t config = sparseConfig("topk", 0.01);
    config.estimator = estimator;
    requireSameAsHost(estimator, 3, count, config, 5, skewed(), scclSum, Collectives::OnStream);
  }
  SECTION("two read-backs and two waits per call with the collectives on the stream") {
    FakeRun run = runOnFake(4, count, sparseConfig("hard_threshold", 0.01), 3, skewed(), scclSum,
                            Collectives::OnStream);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    REQUIRE(run.resident);
    for (size_t r = 0; r < 4; ++r) {
      CHECK(run.counts[2][r].to_host == 2);
      CHECK(run.counts[2][r].to_host_bytes == 2 * (64 + 16 * 4));
      CHECK(run.counts[2][r].waits == 2);
    }
  }
  SECTION("a record claiming more than the vector, and a slot index out of range") {
    const int nranks = 3;
    for (size_t collective : {size_t(0), size_t(1)}) {
      INFO("collective " << collective);
      FakeRun run =
          runOnFake(nranks, count, sparseConfig("hard_threshold", 0.01), 3, skewed(), scclSum,
                    Collectives::OnStream, [&](int call, size_t c, int, void* data, size_t bytes) {
                      if (call != 1 || c != collective) return;
                      auto* w = static_cast<uint64_t*>(data);
                      const size_t each = bytes / sizeof(uint64_t) / nranks;  // rank 1's at each
                      if (collective == 0) {
                        w[each + sccl::kGatherRecordHeaderWords + 1] = count + 1;  // its bins
                      } else {
                        w[each + sccl::kUnionSlotHeaderWords] = count;  // one past the end
                      }
                    });
      REQUIRE_NO_RANK_FAILURES(run.failures);
      for (size_t r = 0; r < size_t(nranks); ++r) {
        INFO("rank " << r);
        CHECK(run.calls[1][r].result == scclRemoteError);
        CHECK(run.counts[1][r].error.find("rank 1") != std::string::npos);
        CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
        CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
      }
    }
  }
}

TEST_CASE("the union plan refuses each bad slot naming the rank", "[resident_gather]") {
  // The CPU plan the GPU test (tests/gpu/test_gpu_resident_union.cc) compares the CUDA one with.
  using namespace sccl;
  GatherPlanParams p;
  p.fingerprint = 0xfeed;
  p.sequence = 9;
  p.nranks = kUnionRanks;
  p.self = 2;
  std::vector<uint64_t> ranges(2 * kUnionRanks);
  for (size_t r = 0; r < kUnionRanks; ++r) ranges[2 * r + 1] = kUnionCount;
  const auto plan_of = [&](const std::vector<uint64_t>& slots, std::vector<int64_t>* global) {
    std::vector<uint64_t> plan(gatherPlanWords(kUnionRanks));
    global->assign(kUnionRanks * kUnionCapacity, -7);
    REQUIRE(cpuKernels().planUnion(slots.data(), p, kUnionCapacity, ranges.data(), global->data(),
                                   plan.data(), nullptr) == scclSuccess);
    return plan;
  };
  const std::vector<uint64_t> valid = unionSlots(p.fingerprint, p.sequence);
  std::vector<int64_t> global;
  const std::vector<uint64_t> plan = plan_of(valid, &global);
  REQUIRE(plan[kPlanStatus] == kPlanOk);
  std::vector<int64_t> want;
  for (size_t r = 0; r < kUnionRanks; ++r) {
    const uint64_t* slot = valid.data() + r * unionSlotWords(kUnionCapacity);
    for (uint64_t j = 0; j < slot[kUnionSlotCount]; ++j)
      want.push_back(int64_t(slot[kUnionSlotHeaderWords + j]));
  }
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  REQUIRE(plan[kPlanKGlobal] == want.size());
  CHECK(std::equal(want.begin(), want.end(), global.begin()));
  CHECK(plan[kPlanEdge] == 0x3f000002u);  // this rank's k-th pattern
  CHECK(plan[kPlanMaxK] == kUnionCapacity);
  struct Case {
    const char* what;
    std::function<void(uint64_t*)> edit;
    uint64_t status;
  };
  const std::vector<Case> cases = {
      {"another call", [](uint64_t* s) { s[kRecordSequence] += 1; }, kPlanMismatch},
      {"a count above the slot", [](uint64_t* s) { s[kUnionSlotCount] = kUnionCapacity + 1; },
       kPlanTooMany},
      {"non-finite values", [](uint64_t* s) { s[kRecordNonFinite] = 3; }, kPlanNonFinite},
      {"indices out of order",
       [](uint64_t* s) { std::swap(s[kUnionSlotHeaderWords + 10], s[kUnionSlotHeaderWords + 11]); },
       kPlanBadIndex},
      {"an index one past the vector",
       [](uint64_t* s) { s[kUnionSlotHeaderWords + s[kUnionSlotCount] - 1] = kUnionCount; },
       kPlanBadIndex},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<uint64_t> slots = valid;
    c.edit(slots.data() + unionSlotWords(kUnionCapacity));  // rank 1's slot
    const std::vector<uint64_t> refused = plan_of(slots, &global);
    CHECK(refused[kPlanStatus] == c.status);
    CHECK(refused[kPlanRank] == 1);
  }
}
