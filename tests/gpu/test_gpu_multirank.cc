// Many ranks on one GPU (CTest gpu_multirank_device): 2, 3 and 4 in-process ranks, all on device
// 0, each with its own stream and a communicator over the in-process transport, whose device
// buffers go through pinned host staging (transports/staging/pinned_staging_transport.h). For
// every sparse preset with a device path and float32 and float16 gradients, the device run equals
// the host run of the same ranks bit for bit: outputs, residuals, thresholds, rank counts, bytes
// sent and received, every call. SIDCo's threshold reads moments whose CUB reduction order
// differs from the CPU's in the last bits (docs/gpu.md), so it is held to what the library
// promises of any run: every rank gets the same output. Then a hostile peer on device buffers
// (an index outside the vector in its sync-free slot): scclRemoteError on every rank, recvbuf
// and residual untouched by the bad call, the communicator usable afterwards; the dense
// collectives on device buffers over the staging; and the stream-ordered call's refusal.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/shared/sync_free_slot_check.h"
#include "kernels/shared/union_plan.h"
#include "bit_mismatch.h"
#include "comm/comm.h"
#include "multirank_runs.h"
#include "run_comparison.h"
#include "support/fault_transport.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_gpu_test;

namespace {

constexpr size_t kCount = 30011;
const HeadHeavyGradient kGradient{29, kCount, 5};
constexpr int kCalls = 4;

// "" when every rank of every call of `run` has the same output bytes.
std::string rankDisagreement(const MultiRankRun& run) {
  for (size_t t = 0; t < run.calls.size(); ++t)
    for (size_t r = 1; r < run.calls[t].size(); ++r) {
      if (run.calls[t][r].result != scclSuccess)
        return "call " + std::to_string(t) + " rank " + std::to_string(r) + ": " +
               run.calls[t][r].error;
      const std::string m = bitMismatch("call " + std::to_string(t) + " rank " +
                                            std::to_string(r) + " against rank 0",
                                        run.calls[t][0].output, run.calls[t][r].output);
      if (!m.empty()) return m;
    }
  return "";
}

}  // namespace

TEST_CASE("several ranks on one GPU over the in-process transport equal the host run bit for bit",
          "[gpu][multirank_device]") {
  for (const char* preset : {"micro", "exdyna", "topk", "cltk", "hard_threshold", "s2",
                             "micro_sync_free", "exdyna_sync_free"}) {
    for (scclDataType_t dtype : {scclFloat32, scclFloat16}) {
      for (int nranks : {2, 3, 4}) {
        INFO(preset << " " << (dtype == scclFloat16 ? "float16" : "float32") << " " << nranks
                    << " ranks on one GPU");
        const scclSparseConfig_t config = sccl_test::sparseConfig(preset, 0.01);
        const MultiRankRun host =
            runMultiRank(nranks, "local", kCount, dtype, config, kCalls, kGradient, Buffers::Host);
        REQUIRE_NO_RANK_FAILURES(host.failures);
        const MultiRankRun device = runMultiRank(nranks, "local", kCount, dtype, config, kCalls,
                                                 kGradient, Buffers::Device);
        REQUIRE_NO_RANK_FAILURES(device.failures);
        const std::string difference =
            differenceBetween(host, device, !exchangesDifferFromHost(preset));
        INFO(difference);
        CHECK(difference.empty());
      }
    }
  }
}

TEST_CASE("SIDCo on several ranks of one GPU gives every rank the same output",
          "[gpu][multirank_device]") {
  for (int nranks : {2, 4}) {
    INFO(nranks << " ranks");
    const MultiRankRun device =
        runMultiRank(nranks, "local", kCount, scclFloat32, sccl_test::sparseConfig("sidco", 0.01),
                     kCalls, kGradient, Buffers::Device, scclAvg);
    REQUIRE_NO_RANK_FAILURES(device.failures);
    const std::string disagreement = rankDisagreement(device);
    INFO(disagreement);
    CHECK(disagreement.empty());
  }
}

TEST_CASE("a hostile peer's out-of-range sync-free index on device buffers is an error everywhere",
          "[gpu][multirank_device]") {
  // The resident sync_free call (src/algorithms/resident_sync_free.cc) reads nothing back: the
  // device fails the call on every rank (recvbuf NaN, residual kept), the sticky fault reaches
  // scclSparsifierGetAsyncError, and later calls do the same until scclSparsifierReset.
  constexpr int kRanks = 3;
  const scclSparseConfig_t config = sccl_test::sparseConfig("micro_sync_free", 0.01);
  auto failures = onRanks(kRanks, transportConfig("local"), true,
                          [&](int r, scclComm_t comm) -> std::string {
    scclSparsifier_t raw = nullptr;
    if (scclSparsifierCreate(&raw, comm, kCount, scclFloat32, &config) != scclSuccess)
      return std::string("create: ") + scclGetLastError(comm);
    Sparsifier sp{raw, &scclSparsifierDestroy};
    const Stream stream;
    DeviceBuffer<float> grad(kGradient.vector(r, 0));
    DeviceBuffer<float> out(std::vector<float>(kCount, 7.0f));
    // Rank 1's slot, as every rank receives it, claims an entry at index kCount (one past the
    // end). Installed after creation, so the slot exchange is the first all-gather it sees.
    sccl_test::Fault fault;
    fault.op = sccl_test::FaultOp::AllGather;
    fault.hostile_rank = 1;
    fault.mutate = [](std::byte* data, size_t) {
      auto* words = reinterpret_cast<int64_t*>(data);
      if (words[0] < 1) words[0] = 1;
      words[sccl::kSlotHeaderWords] = int64_t(kCount);
    };
    sccl_test::installFault(comm, fault);
    for (int call = 0; call < 2; ++call) {
      const scclResult_t result = scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32,
                                                      scclSum, sp.get(), comm, stream.get());
      check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
      if (result != scclSuccess)
        return std::string("call ") + std::to_string(call) + " was not enqueued: " +
               scclGetLastError(comm);
      scclResult_t async = scclSuccess;
      if (scclSparsifierGetAsyncError(sp.get(), &async) != scclSuccess || async != scclRemoteError)
        return std::string("the hostile slot gave the async error ") + scclGetErrorString(async);
      const std::string text = scclGetLastError(comm);
      if (text.find("range") == std::string::npos) return "the error does not say why: " + text;
      std::vector<float> after(kCount);
      check(cudaMemcpy(after.data(), out.get(), kCount * 4, cudaMemcpyDeviceToHost),
            "read output");
      for (size_t i = 0; i < kCount; ++i)
        if (!std::isnan(after[i]))
          return "recvbuf of the failed call is not NaN at " + std::to_string(i);
      scclSparseStats_t stats;
      if (scclSparsifierGetStats(sp.get(), &stats) != scclSuccess || stats.residualNorm != 0.0)
        return "the failed call changed the residual (it starts at zero)";
    }
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}

TEST_CASE("a hostile peer's out-of-range index in the resident micro call is refused everywhere",
          "[gpu][multirank_device]") {
  // The resident call (src/algorithms/resident_gather.cc) checks the slices on the device after
  // its one read-back: the call itself succeeds with recvbuf untouched, the fault is published for
  // scclSparsifierGetAsyncError, and the next call fails, on every rank.
  constexpr int kRanks = 3;
  const scclSparseConfig_t config = sccl_test::sparseConfig("micro", 0.01);
  auto failures = onRanks(kRanks, transportConfig("local"), true,
                          [&](int r, scclComm_t comm) -> std::string {
    scclSparsifier_t raw = nullptr;
    if (scclSparsifierCreate(&raw, comm, kCount, scclFloat32, &config) != scclSuccess)
      return std::string("create: ") + scclGetLastError(comm);
    Sparsifier sp{raw, &scclSparsifierDestroy};
    const Stream stream;
    DeviceBuffer<float> grad(kGradient.vector(r, 0));
    DeviceBuffer<float> out(std::vector<float>(kCount, 7.0f));
    // The second all-gather of the call is the index exchange; rank 0 (the gradient's head lies
    // in its range at call 0) claims index kCount, one past the end.
    sccl_test::Fault fault;
    fault.op = sccl_test::FaultOp::AllGather;
    fault.nth = 1;
    fault.hostile_rank = 0;
    fault.mutate = [](std::byte* data, size_t) { reinterpret_cast<int64_t*>(data)[0] = kCount; };
    sccl_test::installFault(comm, fault);
    scclResult_t result = scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32, scclSum,
                                              sp.get(), comm, stream.get());
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
    if (result != scclSuccess)
      return std::string("the faulted call itself gave ") + scclGetErrorString(result) + ": " +
             scclGetLastError(comm);
    std::vector<float> after(kCount);
    check(cudaMemcpy(after.data(), out.get(), kCount * 4, cudaMemcpyDeviceToHost), "read output");
    for (size_t i = 0; i < kCount; ++i)
      if (after[i] != 7.0f) return "recvbuf was written by the faulted call at " + std::to_string(i);
    scclResult_t async = scclSuccess;
    if (scclSparsifierGetAsyncError(sp.get(), &async) != scclSuccess || async != scclRemoteError)
      return std::string("scclSparsifierGetAsyncError gave ") + scclGetErrorString(async);
    const std::string text = scclGetLastError(comm);
    if (text.find("range") == std::string::npos) return "the error does not say why: " + text;
    result = scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32, scclSum, sp.get(),
                                 comm, stream.get());
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
    if (result != scclRemoteError)
      return std::string("the call after the fault gave ") + scclGetErrorString(result);
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}

TEST_CASE("a hostile peer's out-of-range index in the resident top-k call is refused at the call",
          "[gpu][multirank_device]") {
  // The union call (src/algorithms/resident_union.cc) checks every slice on the device before
  // its plan is read back: the call returns scclRemoteError on every rank, recvbuf untouched.
  constexpr int kRanks = 3;
  const scclSparseConfig_t config = sccl_test::sparseConfig("topk", 0.01);
  auto failures = onRanks(kRanks, transportConfig("local"), true,
                          [&](int r, scclComm_t comm) -> std::string {
    scclSparsifier_t raw = nullptr;
    if (scclSparsifierCreate(&raw, comm, kCount, scclFloat32, &config) != scclSuccess)
      return std::string("create: ") + scclGetLastError(comm);
    Sparsifier sp{raw, &scclSparsifierDestroy};
    const Stream stream;
    DeviceBuffer<float> grad(kGradient.vector(r, 0));
    DeviceBuffer<float> out(std::vector<float>(kCount, 7.0f));
    // The call's first all-gather is the slot exchange; rank 1's first index becomes kCount.
    sccl_test::Fault fault;
    fault.op = sccl_test::FaultOp::AllGather;
    fault.hostile_rank = 1;
    fault.mutate = [](std::byte* data, size_t) {
      reinterpret_cast<int64_t*>(data)[sccl::kUnionSlotHeaderWords] = kCount;
    };
    sccl_test::installFault(comm, fault);
    const scclResult_t result = scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32,
                                                    scclSum, sp.get(), comm, stream.get());
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
    if (result != scclRemoteError)
      return std::string("the hostile slot gave ") + scclGetErrorString(result) + ": " +
             scclGetLastError(comm);
    const std::string text = scclGetLastError(comm);
    if (text.find("rank 1") == std::string::npos || text.find("range") == std::string::npos)
      return "the error does not say who and why: " + text;
    std::vector<float> after(kCount);
    check(cudaMemcpy(after.data(), out.get(), kCount * 4, cudaMemcpyDeviceToHost), "read output");
    for (size_t i = 0; i < kCount; ++i)
      if (after[i] != 7.0f) return "recvbuf was written by the refused call at " + std::to_string(i);
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}

TEST_CASE("dense collectives on device buffers of several ranks on one GPU equal the host's",
          "[gpu][multirank_device]") {
  for (int nranks : {2, 3, 4}) {
    INFO(nranks << " ranks");
    const size_t count = 10007;
    auto failures = onRanks(nranks, transportConfig("local"), true,
                            [&](int r, scclComm_t comm) -> std::string {
      std::vector<float> mine(count), want_sum(count, 0.0f), want_gather;
      for (size_t i = 0; i < count; ++i) mine[i] = kGradient(r, 0, i);
      for (int p = 0; p < nranks; ++p) {
        for (size_t i = 0; i < count; ++i) want_sum[i] += kGradient(p, 0, i);  // rank order
        for (size_t i = 0; i < count; ++i) want_gather.push_back(kGradient(p, 0, i));
      }
      const Stream stream;
      DeviceBuffer<float> send(mine), sum(count), gathered(count * size_t(nranks));
      if (scclAllReduce(send.get(), sum.get(), count, scclFloat32, scclSum, comm, stream.get()) !=
          scclSuccess)
        return std::string("scclAllReduce: ") + scclGetLastError(comm);
      if (scclAllGather(send.get(), gathered.get(), count, scclFloat32, comm, stream.get()) !=
          scclSuccess)
        return std::string("scclAllGather: ") + scclGetLastError(comm);
      check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
      std::string m = bitMismatch("all-reduce", want_sum, sum.read());
      if (m.empty()) m = bitMismatch("all-gather", want_gather, gathered.read());
      if (!m.empty()) return m;
      if (comm->device_transport == nullptr ||
          std::string(comm->device_transport->name()) != "local+pinned")
        return "the collectives did not go through the pinned staging";
      return "";
    });
    CHECK_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("the stream-ordered call over the in-process transport is refused and says why",
          "[gpu][multirank_device]") {
  scclSparseConfig_t config = sccl_test::sparseConfig("micro_sync_free", 0.01);
  config.streamOrdered = 1;
  auto failures = onRanks(2, transportConfig("local"), true,
                          [&](int r, scclComm_t comm) -> std::string {
    scclSparsifier_t raw = nullptr;
    if (scclSparsifierCreate(&raw, comm, kCount, scclFloat32, &config) != scclSuccess)
      return std::string("create: ") + scclGetLastError(comm);
    Sparsifier sp{raw, &scclSparsifierDestroy};
    DeviceBuffer<float> grad(kGradient.vector(r, 0)), out(kCount);
    if (scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32, scclSum, sp.get(), comm,
                            nullptr) != scclInvalidUsage)
      return "the stream-ordered call over 'local' was not scclInvalidUsage";
    const std::string text = scclGetLastError(comm);
    if (text.find("nccl") == std::string::npos || text.find("graph") == std::string::npos)
      return "the refusal does not say why: " + text;
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}
