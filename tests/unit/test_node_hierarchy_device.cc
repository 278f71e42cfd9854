// "hierarchy": "node" on device buffers, on the fake device (support/fake_device.h): the node's
// vectors in memory the host cannot touch, every copy and kernel deferred to the stream's waits,
// the transport inside the node a pinned staging transport over the fake, and the preset across
// nodes through the resident device call (algorithms/staged_call.h) on each rank's fake. Checked
// bitwise against the same calls on host buffers through the public API: outputs, statistics and
// rank counts at 2 and 3 nodes of two ranks, sum and avg, float32, float16 and float64, a count
// that needs padding; NaN under both policies; no host access, no read of unwaited memory; and
// the switch between host and device buffers refused. Runs in node_hierarchy_local (nodes of
// two, SCCL_RANKS_PER_NODE=2).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "sparsifier/hierarchy_memory.h"
#include "sparsifier/node_hierarchy.h"
#include "sparsifier/sparsifier.h"
#include "support/fake_device.h"
#include "support/local_ranks.h"
#include "support/node_hierarchy_inputs.h"
#include "support/typed_values.h"

using namespace sccl_test;

namespace {

constexpr float kUntouched = 12345.0f;

// Rank r's gradient at call t; nan_at >= 0 puts a NaN at that element of the last rank's call 1.
double gradientOf(int rank, int nranks, int call, size_t i, long nan_at) {
  if (nan_at >= 0 && rank == nranks - 1 && call == 1 && i == size_t(nan_at))
    return std::numeric_limits<double>::quiet_NaN();
  return nodeTestGradient(rank, call, i);
}

struct RankCall {
  scclResult_t result = scclSuccess;
  std::vector<unsigned char> output;
  scclSparseStats_t stats{};
  std::vector<uint64_t> counts;
  DeviceCounters outer;  // the fake device's counts of the call, less the inner call's
};
using Runs = std::vector<std::vector<RankCall>>;  // [rank][call]

struct Setup {
  int nranks = 4;
  size_t count = 3001;
  scclDataType_t dtype = scclFloat32;
  scclRedOp_t op = scclSum;
  int calls = 5;
  long nan_at = -1;
};

void record(scclSparsifier_t sp, RankCall& c, RankLog& log) {
  c.stats.size = sizeof(c.stats);
  log.checkResult(scclSparsifierGetStats(sp, &c.stats), scclSuccess, "stats");
  c.counts = sp->reduction_memory.rank_counts;
}

Runs onHost(const Setup& s, const scclSparseConfig_t& config) {
  Runs runs(size_t(s.nranks), std::vector<RankCall>(size_t(s.calls)));
  const size_t bytes = s.count * sccl::dataTypeSize(s.dtype);
  auto failures = runLocalRanks(s.nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, s.count, s.dtype, &config), scclSuccess,
                         "create"))
      return;
    std::vector<unsigned char> send(bytes), recv(bytes);
    for (int t = 0; t < s.calls; ++t) {
      for (size_t i = 0; i < s.count; ++i) {
        storeValue(s.dtype, send.data(), i, gradientOf(rank, s.nranks, t, i, s.nan_at));
        storeValue(s.dtype, recv.data(), i, kUntouched);
      }
      RankCall& c = runs[size_t(rank)][size_t(t)];
      c.result =
          scclSparseAllreduce(send.data(), recv.data(), s.count, s.dtype, s.op, sp, comm, nullptr);
      c.output = recv;
      record(sp, c, log);
    }
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  return runs;
}

// The inner sparsifier's device half on the fake: its residual and accumulator, and the resident
// call staged over the inner communicator's host transport.
struct FakeInner {
  explicit FakeInner(FakeDevice& device) : staging(device), exchange(staging) {}
  FakeStaging staging;
  sccl::StagedExchange exchange;
  sccl::StagedVectors vectors;
  uint32_t published = sccl::kNoIndexFault;
  bool ready = false;

  void prepare(FakeDevice& device, const scclSparsifier& inner) {
    if (ready) return;
    const size_t acc_bytes = std::max<size_t>(1, inner.count) * sccl::dataTypeSize(inner.acc_dtype);
    vectors.residual = device.allocate(acc_bytes);
    vectors.acc = device.allocate(acc_bytes);
    vectors.nonfinite = static_cast<uint64_t*>(device.allocate(sizeof(uint64_t)));
    vectors.fault = static_cast<uint32_t*>(device.allocate(sizeof(uint32_t)));
    vectors.published_fault = &published;
    std::memset(device.view(vectors.residual), 0, acc_bytes);
    *device.at(vectors.fault) = sccl::kNoIndexFault;
    ready = true;
  }
};

struct DeviceRun {
  Runs runs;
  std::vector<std::string> violations;
};

DeviceRun onFake(const Setup& s, const scclSparseConfig_t& config) {
  DeviceRun out;
  out.runs.assign(size_t(s.nranks), std::vector<RankCall>(size_t(s.calls)));
  std::vector<std::vector<std::string>> violations(size_t(s.nranks));
  const size_t bytes = s.count * sccl::dataTypeSize(s.dtype);
  auto failures = runLocalRanks(s.nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, s.count, s.dtype, &config), scclSuccess,
                         "create"))
      return;
    FakeDevice device;
    FakeKernels kernels(device);
    FakeStaging staging(device);
    FakeInner inner(device);
    installFakeDeviceTransport(sp->hierarchy->intra, device);
    DeviceCounters inner_counts;  // what the inner calls of the current call cost
    const sccl::InnerDeviceCall inner_call = [&](scclSparsifier* in, void* chunk, void* stream) {
      inner.prepare(device, *in);
      const DeviceCounters before = device.counters;
      const scclResult_t result = sccl::sparseAllreduceOnDevice(
          in, chunk, chunk, scclSum, stream,
          [&](scclSparsifier&, sccl::SparseCall& call, void* st) {
            return sccl::runStagedCall(call, kernels, inner.staging, inner.vectors, st,
                                       &inner.exchange);
          });
      inner_counts.to_host += device.counters.to_host - before.to_host;
      inner_counts.to_host_bytes += device.counters.to_host_bytes - before.to_host_bytes;
      inner_counts.to_device += device.counters.to_device - before.to_device;
      inner_counts.to_device_bytes += device.counters.to_device_bytes - before.to_device_bytes;
      inner_counts.waits += device.counters.waits - before.waits;
      return result;
    };
    const sccl::HierarchyDevice fake{
        [](const scclSparsifier&, void*) { return scclSuccess; },
        [&](scclSparsifier& outer, std::unique_ptr<sccl::HierarchyMemory>* memory) {
          auto m = std::make_unique<sccl::StagedHierarchyMemory>(
              kernels, staging, sccl::deviceTransportOf(outer.hierarchy->intra), inner_call);
          SCCL_CHECK(m->reserve(*outer.hierarchy, outer.count, outer.dtype));
          *memory = std::move(m);
          return scclSuccess;
        }};
    void* grad = device.allocate(bytes);
    void* recv = device.allocate(bytes);
    for (int t = 0; t < s.calls; ++t) {
      for (size_t i = 0; i < s.count; ++i) {
        storeValue(s.dtype, device.view(grad), i, gradientOf(rank, s.nranks, t, i, s.nan_at));
        storeValue(s.dtype, device.view(recv), i, kUntouched);
      }
      RankCall& c = out.runs[size_t(rank)][size_t(t)];
      inner_counts = DeviceCounters{};
      const DeviceCounters before = device.counters;
      c.result = sccl::hierarchicalAllreduceOnDevice(*sp, grad, recv, s.op, nullptr, fake);
      c.outer.to_host = device.counters.to_host - before.to_host - inner_counts.to_host;
      c.outer.to_host_bytes =
          device.counters.to_host_bytes - before.to_host_bytes - inner_counts.to_host_bytes;
      c.outer.to_device = device.counters.to_device - before.to_device - inner_counts.to_device;
      c.outer.to_device_bytes =
          device.counters.to_device_bytes - before.to_device_bytes - inner_counts.to_device_bytes;
      c.outer.waits = device.counters.waits - before.waits - inner_counts.waits;
      device.wait();  // the caller's synchronisation before it reads recvbuf
      const auto* o = static_cast<const unsigned char*>(device.view(recv));
      c.output.assign(o, o + bytes);
      record(sp, c, log);
    }
    // The residual lives on the device now: host buffers are refused, nothing changes, and the
    // communicator stays usable.
    std::vector<unsigned char> host_send(bytes, 0), host_recv(bytes, 0);
    log.checkResult(scclSparseAllreduce(host_send.data(), host_recv.data(), s.count, s.dtype, s.op,
                                        sp, comm, nullptr),
                    scclInvalidUsage, "host buffers after device calls");
    float x = 1.0f;
    log.checkResult(scclAllReduce(&x, &x, 1, scclFloat32, scclSum, comm, nullptr), scclSuccess,
                    "allreduce after the refusal");
    violations[size_t(rank)] = device.violations;
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  for (auto& v : violations) out.violations.insert(out.violations.end(), v.begin(), v.end());
  return out;
}

void requireSame(const Runs& host, const DeviceRun& fake) {
  std::string violations;
  for (const std::string& v : fake.violations) violations += v + "; ";
  INFO("violations: " << violations);
  CHECK(fake.violations.empty());
  for (size_t r = 0; r < host.size(); ++r) {
    for (size_t t = 0; t < host[r].size(); ++t) {
      INFO("rank " << r << " call " << t);
      const RankCall& want = host[r][t];
      const RankCall& got = fake.runs[r][t];
      REQUIRE(got.result == want.result);
      CHECK(got.output == want.output);
      CHECK(got.counts == want.counts);
      CHECK(got.stats.iteration == want.stats.iteration);
      CHECK(got.stats.kGlobal == want.stats.kGlobal);
      CHECK(got.stats.kTarget == want.stats.kTarget);
      // Bytes across nodes are the inner device call's, which exchanges its header and bins
      // in another form than the host reduction (docs/gpu.md, "Bytes on the wire").
      CHECK((got.stats.bytesSent > 0) == (want.stats.bytesSent > 0));
      CHECK(got.stats.bytesSentInsideNode == want.stats.bytesSentInsideNode);
      CHECK(got.stats.nonFinite == want.stats.nonFinite);
    }
  }
}

scclSparseConfig_t hierarchical(const char* preset, const char* extra = "") {
  return configOf((std::string(R"({"algorithm": ")") + preset +
                   R"(", "density": 0.02, "hierarchy": "node")" + extra + "}")
                      .c_str());
}

}  // namespace

TEST_CASE("hierarchy node on device buffers: bitwise the host run on the fake device",
          "[.hierarchy]") {
  requireNodesOfTwo();
  struct Case {
    const char* preset;
    int nranks;
    size_t count;
    scclDataType_t dtype;
    scclRedOp_t op;
  };
  for (const Case& c :
       {Case{"micro", 4, 3001, scclFloat32, scclSum}, Case{"exdyna", 4, 4000, scclFloat32, scclAvg},
        Case{"micro", 6, 2500, scclFloat16, scclAvg}, Case{"topk", 4, 2049, scclFloat64, scclSum},
        Case{"micro", 2, 1000, scclFloat32, scclSum}}) {
    DYNAMIC_SECTION(c.preset << ", " << c.nranks << " ranks, count " << c.count << ", dtype "
                             << int(c.dtype) << ", op " << int(c.op)) {
      Setup s;
      s.nranks = c.nranks;
      s.count = c.count;
      s.dtype = c.dtype;
      s.op = c.op;
      const scclSparseConfig_t config = hierarchical(c.preset);
      const DeviceRun fake = onFake(s, config);
      requireSame(onHost(s, config), fake);
      // What the hierarchy itself costs a call, besides the preset across nodes: three waits
      // (before the reduce-scatter, the non-finite count, before the all-gather), the count's
      // 8 bytes read back, and each collective inside the node staging exactly its own bytes
      // (reduce-scatter: L c elements out, c in; all-gather: c out, L c in).
      const size_t L = size_t(sccl_test::kRanksPerNode);
      const size_t c_bytes = (c.count + L - 1) / L * sccl::dataTypeSize(c.dtype);
      for (size_t r = 0; r < fake.runs.size(); ++r) {
        for (size_t t = 0; t < fake.runs[r].size(); ++t) {
          INFO("rank " << r << " call " << t);
          const DeviceCounters& o = fake.runs[r][t].outer;
          CHECK(o.waits == 3);
          CHECK(o.to_host == 3);
          CHECK(o.to_host_bytes == 8 + (L + 1) * c_bytes);
          CHECK(o.to_device == 2);
          CHECK(o.to_device_bytes == (L + 1) * c_bytes);
        }
      }
    }
  }
}

TEST_CASE("hierarchy node on device buffers: NaN follows the policy as on host buffers",
          "[.hierarchy]") {
  requireNodesOfTwo();
  for (const char* policy : {"propagate", "error"}) {
    DYNAMIC_SECTION("policy " << policy) {
      Setup s;
      s.count = 2000;
      s.nan_at = 1999;  // the last rank's second chunk
      const std::string extra = std::string(R"(, "non_finite": ")") + policy + "\"";
      const scclSparseConfig_t config = hierarchical("micro", extra.c_str());
      const Runs host = onHost(s, config);
      const DeviceRun fake = onFake(s, config);
      requireSame(host, fake);
      // What the policy does, on every rank: NaN out and the step not counted, or refused with
      // recvbuf untouched.
      const bool error = std::string(policy) == "error";
      for (const auto& rank_calls : fake.runs) {
        const RankCall& c = rank_calls[1];
        CHECK(c.result == (error ? scclInvalidArgument : scclSuccess));
        const float first = float(loadValue(scclFloat32, c.output.data(), 0));
        CHECK((error ? first == kUntouched : std::isnan(first)));
        CHECK(c.stats.iteration == 1);
      }
    }
  }
}
