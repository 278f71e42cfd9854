// scclSparseAllreduce on device buffers (cuda/device_sparse_allreduce.cc) over the NCCL
// transport, one rank per GPU, against the host run of the same presets on the in-process
// transport: outputs bit for bit, counts and thresholds equal, every call. Then what the device
// path refuses (mixed memory, a reduction without a device path, host buffers after device calls)
// with the documented codes, and a valid call on the same communicator afterwards.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "gpu_gradients.h"
#include "gpu_ranks.h"
#include "run_comparison.h"
#include "sccl_build_config.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_test;
using sccl_gpu_test::DeviceBuffer;
using sccl_gpu_test::lastError;

#if SCCL_BUILD_WITH_NCCL
namespace {

constexpr size_t kCount = 30011;
const sccl_gpu_test::HeadHeavyGradient gradientOf{23, kCount, 5};
constexpr int kIterations = 5;

// kIterations calls of `sp` on device buffers holding rank r's gradients, on a stream of its
// own; after each, once the stream is done, after(t, recvbuf): "" or what differs. Returns ""
// or the first failure, naming the call.
template <typename After>
std::string runDeviceCalls(scclComm_t comm, int r, scclSparsifier_t sp, After after) {
  DeviceBuffer<float> out(kCount);
  const sccl_gpu_test::Stream stream_owner;
  const cudaStream_t stream = stream_owner.get();
  for (int t = 0; t < kIterations; ++t) {
    DeviceBuffer<float> grad(gradientOf.vector(r, uint64_t(t)));
    if (scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32, scclSum, sp, comm,
                            stream) != scclSuccess)
      return "call " + std::to_string(t) + ": " + lastError(comm);
    sccl_gpu_test::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const std::string difference = after(t, out);
    if (!difference.empty()) return "call " + std::to_string(t) + ": " + difference;
  }
  return "";
}

}  // namespace

TEST_CASE("sparse allreduce on device buffers equals the host run bit for bit",
          "[gpu][sparse_device]") {
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  // The gather presets (top-k's k-th value, the density correction's histogram and the selection
  // are bitwise the CPU's), S2 (block norms, encode and decode are bitwise the CPU's) and the
  // sync_free presets. SIDCo, RedSync and GaussianK read moments, whose CUB reduction order
  // differs from the CPU's in the last bits: not compared bit for bit.
  for (const char* preset : {"micro", "exdyna", "topk", "cltk", "hard_threshold", "s2",
                             "micro_sync_free", "exdyna_sync_free"}) {
    INFO(preset << " on " << nranks << " GPUs");
    scclSparseConfig_t config = sparseConfig(preset, 0.01);
    config.scalingRule = "band";  // plain multiplications: the host estimator is the same anyway
    SparseRun host = runSparse(nranks, kCount, config, kIterations, gradientOf);
    REQUIRE_NO_RANK_FAILURES(host.failures);
    auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
      sccl_gpu_test::Sparsifier owned{nullptr, &scclSparsifierDestroy};
      const std::string created = sccl_gpu_test::createSparsifier(comm, kCount, config, &owned);
      if (!created.empty()) return created;
      scclSparsifier_t sp = owned.get();
      const std::string calls = runDeviceCalls(comm, r, sp, [&](int t, DeviceBuffer<float>& out) {
        const RankIteration& want = host.calls[size_t(t)][size_t(r)];
        scclSparseStats_t stats;
        const std::string difference = sccl_gpu_test::differenceFromHost(out, sp, want, &stats);
        if (!difference.empty()) return difference;
        const bool bytes_differ = !sccl_gpu_test::exchangesDifferFromHost(preset) &&
                                  stats.bytesSent != want.stats.bytesSent;
        if (stats.threshold != want.stats.threshold || bytes_differ)
          return std::string("statistics differ from the host run");
        return std::string();
      });
      if (!calls.empty()) return calls;
      // Host buffers after device calls: the residual is in device memory.
      std::vector<float> host_grad = gradientOf.vector(r, 0), host_out(kCount);
      if (scclSparseAllreduce(host_grad.data(), host_out.data(), kCount, scclFloat32, scclSum, sp,
                              comm, nullptr) != scclInvalidUsage)
        return "host buffers after device calls were not refused";
      return "";
    });
    CHECK_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("a checkpoint of device sync_free calls resumes on host buffers as the host run",
          "[gpu][sparse_device]") {
  // The threshold, partitions and call number live in the device's words: the export reads them
  // (and the device residual), and a new sparsifier that loads the blob continues on host buffers
  // as the uninterrupted host run.
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  constexpr int kAfter = 3;
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    INFO(preset << " on " << nranks << " GPUs");
    scclSparseConfig_t config = sparseConfig(preset, 0.01);
    config.scalingRule = "band";
    SparseRun host = runSparse(nranks, kCount, config, kIterations + kAfter, gradientOf);
    REQUIRE_NO_RANK_FAILURES(host.failures);
    auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
      std::vector<unsigned char> blob;
      {
        sccl_gpu_test::Sparsifier owned{nullptr, &scclSparsifierDestroy};
        const std::string created = sccl_gpu_test::createSparsifier(comm, kCount, config, &owned);
        if (!created.empty()) return created;
        const std::string calls =
            runDeviceCalls(comm, r, owned.get(), [](int, DeviceBuffer<float>&) { return ""; });
        if (!calls.empty()) return calls;
        size_t bytes = 0;
        if (scclSparsifierGetStateSize(owned.get(), &bytes) != scclSuccess)
          return "state size: " + lastError(comm);
        blob.resize(bytes);
        if (scclSparsifierExportState(owned.get(), blob.data(), bytes, nullptr) != scclSuccess)
          return "export: " + lastError(comm);
      }
      sccl_gpu_test::Sparsifier loaded{nullptr, &scclSparsifierDestroy};
      const std::string created = sccl_gpu_test::createSparsifier(comm, kCount, config, &loaded);
      if (!created.empty()) return created;
      if (scclSparsifierImportState(loaded.get(), blob.data(), blob.size()) != scclSuccess)
        return "import: " + lastError(comm);
      std::vector<float> out(kCount);
      for (int t = kIterations; t < kIterations + kAfter; ++t) {
        std::vector<float> grad = gradientOf.vector(r, uint64_t(t));
        if (scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, loaded.get(),
                                comm, nullptr) != scclSuccess)
          return "host call " + std::to_string(t) + ": " + lastError(comm);
        const std::vector<float>& want = host.calls[size_t(t)][size_t(r)].output;
        if (std::memcmp(want.data(), out.data(), kCount * sizeof(float)) != 0)
          return "host call " + std::to_string(t) + " after the load differs from the host run";
      }
      return "";
    });
    CHECK_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("sparse allreduce on device buffers refuses what it cannot run and stays usable",
          "[gpu][sparse_device]") {
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
    scclSparseConfig_t dense = sparseConfig("dense", 0.01);
    scclSparseConfig_t sync_free = sparseConfig("micro_sync_free", 0.01);
    scclSparsifier_t dense_sp = nullptr, sync_free_sp = nullptr;
    if (scclSparsifierCreate(&dense_sp, comm, kCount, scclFloat32, &dense) != scclSuccess ||
        scclSparsifierCreate(&sync_free_sp, comm, kCount, scclFloat32, &sync_free) != scclSuccess)
      return "create: " + lastError(comm);
    DeviceBuffer<float> grad(gradientOf.vector(r, 0)), out(kCount);
    std::vector<float> host_out(kCount);
    if (scclSparseAllreduce(grad.get(), host_out.data(), kCount, scclFloat32, scclSum, sync_free_sp,
                            comm, nullptr) != scclInvalidArgument)
      return "GPU sendbuf with a host recvbuf was not scclInvalidArgument";
    if (scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32, scclSum, dense_sp, comm,
                            nullptr) != scclInvalidUsage)
      return "the dense preset on device buffers was not scclInvalidUsage";
    if (lastError(comm).find("gather") == std::string::npos)
      return "the refusal does not name what runs on the device: " + lastError(comm);
    if (scclSparseAllreduce(grad.get(), out.get(), kCount, scclFloat32, scclAvg, sync_free_sp, comm,
                            nullptr) != scclSuccess)
      return "a valid call after the refusals failed: " + lastError(comm);
    scclResult_t async = scclSuccess;
    scclCommGetAsyncError(comm, &async);
    if (async != scclSuccess) return "the communicator is in an error state";
    scclSparsifierDestroy(dense_sp);
    scclSparsifierDestroy(sync_free_sp);
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}

// "auto" (tuning/auto_device.h): the creation may choose dense, which has no device path; the
// first device call then runs the fastest candidate with one. Every rank runs the same preset,
// and the outputs are those of that preset named, on host buffers, bit for bit.
TEST_CASE("auto on device buffers runs a preset with a device path, as that preset would",
          "[gpu][sparse_device][auto]") {
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  for (int stream_ordered : {0, 1}) {
    INFO("streamOrdered " << stream_ordered << " on " << nranks << " GPUs");
    scclSparseConfig_t config = sparseConfig("auto", 0.01);
    config.scalingRule = "band";  // as in the comparison above
    config.streamOrdered = stream_ordered;
    std::vector<std::string> chosen(static_cast<size_t>(nranks));
    // [call][rank]: the device run's outputs, compared once the host run of the chosen preset is
    // known.
    std::vector<std::vector<std::vector<float>>> outputs(
        kIterations, std::vector<std::vector<float>>(static_cast<size_t>(nranks)));
    auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
      sccl_gpu_test::Sparsifier owned{nullptr, &scclSparsifierDestroy};
      const std::string created = sccl_gpu_test::createSparsifier(comm, kCount, config, &owned);
      if (!created.empty()) return created;
      scclSparsifier_t sp = owned.get();
      const std::string calls = runDeviceCalls(comm, r, sp, [&](int t, DeviceBuffer<float>& out) {
        outputs[size_t(t)][size_t(r)] = out.read();
        return std::string();
      });
      if (!calls.empty()) return calls;
      const char* name = nullptr;
      if (scclSparsifierGetAlgorithm(sp, &name) != scclSuccess) return "GetAlgorithm failed";
      chosen[size_t(r)] = name;
      return "";
    });
    REQUIRE_NO_RANK_FAILURES(failures);
    for (const std::string& name : chosen) REQUIRE(name == chosen[0]);
    INFO("auto ran " << chosen[0]);
    CHECK(chosen[0] != "dense");
    if (stream_ordered == 1)
      CHECK((chosen[0] == "micro_sync_free" || chosen[0] == "exdyna_sync_free"));
    scclSparseConfig_t named = config;
    named.algorithm = chosen[0].c_str();
    named.streamOrdered = 0;  // the host run: host buffers ignore it anyway
    SparseRun host = runSparse(nranks, kCount, named, kIterations, gradientOf);
    REQUIRE_NO_RANK_FAILURES(host.failures);
    for (int t = 0; t < kIterations; ++t)
      for (int r = 0; r < nranks; ++r) {
        const std::string m = sccl_gpu_test::bitMismatch(
            "call " + std::to_string(t) + " rank " + std::to_string(r),
            host.calls[size_t(t)][size_t(r)].output, outputs[size_t(t)][size_t(r)]);
        if (!m.empty()) FAIL(m);
      }
  }
}
#endif
