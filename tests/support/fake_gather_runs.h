// The fake-device harness of the resident gather and union tests (test_resident_gather.cc,
// test_resident_union.cc): runs a preset's calls through algorithms/staged_call.h on the fake
// device (support/fake_device.h) of every in-process rank, with the collectives on the stream, in
// the two-step form, staged over the host transport or through the legacy staging, records
// outputs, residuals, counts and the per-call read-backs and waits, and compares with the host
// run bit for bit.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/resident_gather.h"
#include "algorithms/sketch_call.h"
#include "algorithms/resident_union.h"
#include "algorithms/staged_call.h"
#include "core/collective_bytes.h"
#include "kernels/shared/gather_plan.h"
#include "sparsifier/sparsifier.h"
#include "support/fake_device.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"
#include "support/typed_sparse_runs.h"
#include "support/typed_values.h"

namespace sccl_test {

inline constexpr float kSentinel = 12345.0f;  // recvbuf before each call: "untouched" is checkable

// OnStream: as NCCL (one all-gather of header + bins); TwoStep: the same collectives on the
// stream in the two-step form; Staged: the host transport (two-step from 8 ranks).
enum class Collectives { OnStream, TwoStep, Staged, Legacy };

struct CallCounts {
  uint64_t to_host = 0, to_host_bytes = 0, to_device = 0, waits = 0;
  uint32_t published_fault = sccl::kNoIndexFault;  // what the host reads after the call
  uint64_t async_fault = 0;                        // the sticky fault word after the call
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
inline FakeRun runOnFake(int nranks, size_t count, const scclSparseConfig_t& config, int iterations,
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
    resident[size_t(rank)] = sccl::residentGatherApplies(sccl::reductionContext(*sp)) ||
                                     sccl::residentUnionApplies(sccl::reductionContext(*sp)) ||
                                     sccl::isSketchCall(sccl::reductionContext(*sp))
                                 ? 1
                                 : 0;
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
    // The sticky fault word of the calls that read nothing back: host memory both sides use, as
    // CUDA's mapped page-locked word.
    uint64_t async_fault = 0;
    sccl::StagedVectors vectors{residual, acc, nonfinite, fault, &published, &async_fault};
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
      const sccl::ReductionContext ctx = sccl::reductionContext(*sp);
      sccl::SparseCall call;
      call.ctx = &ctx;
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
      c.async_fault = async_fault;
      if (record.result != scclSuccess) c.error = scclGetLastError(nullptr);  // the thread's
      // A call whose outcome stayed on the device: its statistics as scclSparsifierGetStats reads
      // them (after the counts above: the user asks when they want them).
      record.stats.threshold = call.threshold;
      if (record.result == scclSuccess && call.outcome_on_device) {
        scclSparseStats_t stats{};
        log.checkResult(sccl::settledCallStats(ctx, staging, &stats), scclSuccess,
                        "settledCallStats");
        if (sccl::isSketchCall(ctx)) call.k_global = stats.kGlobal;  // CLT-k's are the host's
        record.stats.threshold = stats.threshold;
      }
      if (record.result == scclSuccess && (!call.step_discarded || sccl::discardedCallCounts(*sp)))
        ++sp->iteration;
      TypedRankCall& typed = run.typed[size_t(t)][size_t(rank)];
      typed.result = record.result;
      const auto* o = static_cast<const unsigned char*>(device.view(out));
      typed.output.assign(o, o + bytes);
      typed.residual.resize(count);
      for (size_t i = 0; i < count; ++i)
        typed.residual[i] = loadValue(acc_dtype, device.view(vectors.residual), i);
      typed.counts = sp->reduction_memory.rank_counts;
      if (dtype == scclFloat32) {
        const float* of = static_cast<const float*>(device.view(out));
        record.output.assign(of, of + count);
        const float* r = static_cast<const float*>(device.view(vectors.residual));
        record.residual.assign(r, r + count);
      }
      record.counts = sp->reduction_memory.rank_counts;
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

inline void requireSameAsHost(const char* what, int nranks, size_t count,
                              const scclSparseConfig_t& config, int iterations,
                              const GradientFn& gradient, scclRedOp_t op, Collectives how) {
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
        // The threshold the call used (an estimator's fit; SIDCo's count check chosen on the
        // device and read back with the plan), bit for bit.
        INFO("threshold " << got.stats.threshold << ", the host's " << want.stats.threshold);
        CHECK(std::memcmp(&got.stats.threshold, &want.stats.threshold, sizeof(double)) == 0);
      }
    }
  }
}

inline void requireTypedSameAsHost(const char* what, int nranks, size_t count, scclDataType_t dtype,
                                   const scclSparseConfig_t& config, int iterations,
                                   const TypedGradientFn& gradient, scclRedOp_t op,
                                   Collectives how) {
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

inline GradientFn skewed() {
  return [](int r, uint64_t t, size_t i) {
    return gradientValue(37, r, t, i) * (i < 4000 ? 6.0f : 1.0f);
  };
}

}  // namespace sccl_test
