// The stream-ordered sync_free call (src/algorithms/resident_sync_free.cc), one rank
// per GPU over NCCL: eager calls and replays of a CUDA graph that captured one call give the host
// run's outputs bit for bit, call after call, for micro_sync_free and exdyna_sync_free (whose
// partitions move on the device as on the host; band scaling rule: the device threshold update is
// plain multiplication, bitwise the host's); faults surface through
// scclSparsifierGetAsyncError, fill recvbuf with NaN and stick until scclSparsifierReset; the
// first call cannot be captured.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/shared/half.h"
#include "device_buffer.h"
#include "kernels/shared/canonical_nan.h"
#include "gpu_gradients.h"
#include "gpu_ranks.h"
#include "sccl_build_config.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_test;
using sccl_gpu_test::check;
using sccl_gpu_test::DeviceBuffer;
using sccl_gpu_test::lastError;

#if SCCL_BUILD_WITH_NCCL
namespace {

constexpr size_t kCount = 30011;
const sccl_gpu_test::HeadHeavyGradient gradientOf{29, kCount, 7};
constexpr int kIterations = 7;

scclSparseConfig_t streamOrderedConfig(const char* preset) {
  scclSparseConfig_t config = sparseConfig(preset, 0.01);
  config.scalingRule = "band";
  config.streamOrdered = 1;
  return config;
}

// Every element the canonical float32 NaN, the pattern a failed or discarded call writes (the
// host's, algorithms/call_header.cc; docs/gpu.md, "NaN payloads"), checked by its bits.
bool allNaN(const std::vector<float>& values) {
  for (float v : values)
    if (sccl::floatToBits(v) != sccl::kCanonicalNaNFloat32) return false;
  return true;
}

}  // namespace

TEST_CASE("stream ordered calls eager and replayed from a cuda graph equal the host run",
          "[gpu][stream_ordered]") {
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    INFO(preset << " on " << nranks << " GPUs");
    const scclSparseConfig_t config = streamOrderedConfig(preset);
    SparseRun host = runSparse(nranks, kCount, config, kIterations, gradientOf);
    REQUIRE_NO_RANK_FAILURES(host.failures);
    auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
      sccl_gpu_test::Sparsifier owned{nullptr, &scclSparsifierDestroy};
      const std::string created = sccl_gpu_test::createSparsifier(comm, kCount, config, &owned);
      if (!created.empty()) return created;
      scclSparsifier_t sp = owned.get();
      const sccl_gpu_test::Stream stream_owner;
      const cudaStream_t stream = stream_owner.get();
      DeviceBuffer<float> send(kCount), out(kCount);
      std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, cudaError_t (*)(cudaGraphExec_t)>
          replay{nullptr, &cudaGraphExecDestroy};
      for (int t = 0; t < kIterations; ++t) {
        const std::string call = "call " + std::to_string(t);
        std::vector<float> grad = gradientOf.vector(r, uint64_t(t));
        check(cudaMemcpyAsync(send.get(), grad.data(), kCount * 4, cudaMemcpyHostToDevice, stream),
              "gradient to the device");
        if (t < 2) {  // eager: the first call allocates, the second runs on warm state
          if (scclSparseAllreduce(send.get(), out.get(), kCount, scclFloat32, scclSum, sp, comm,
                                  stream) != scclSuccess)
            return call + ": " + lastError(comm);
        } else {
          if (!replay) {  // capture one call, then replay it for every later one
            check(cudaStreamSynchronize(stream), "gradient copy");
            cudaGraph_t graph = nullptr;
            check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                  "begin capture");
            const scclResult_t captured = scclSparseAllreduce(
                send.get(), out.get(), kCount, scclFloat32, scclSum, sp, comm, stream);
            check(cudaStreamEndCapture(stream, &graph), "end capture");
            if (captured != scclSuccess) return "capture: " + lastError(comm);
            cudaGraphExec_t exec = nullptr;
            const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
            check(cudaGraphDestroy(graph), "cudaGraphDestroy");
            check(instantiated, "cudaGraphInstantiate");
            replay.reset(exec);
          }
          check(cudaGraphLaunch(replay.get(), stream), "cudaGraphLaunch");
        }
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        scclSparseStats_t stats;
        const std::string difference =
            sccl_gpu_test::differenceFromHost(out, sp, host.calls[size_t(t)][size_t(r)], &stats);
        if (!difference.empty()) return call + ": " + difference;
        if (stats.iteration != uint64_t(t) + 1) return call + ": the device counted another call";
        if (std::memcmp(&stats.threshold, &host.calls[size_t(t)][size_t(r)].stats.threshold,
                        sizeof(double)) != 0)
          return call + ": the threshold the device used differs from the host's";
      }
      scclResult_t async = scclInternalError;
      if (scclSparsifierGetAsyncError(sp, &async) != scclSuccess || async != scclSuccess)
        return "asynchronous error after valid calls: " + lastError(comm);
      return "";
    });
    CHECK_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("stream ordered faults are asynchronous sticky and leave NaN outputs",
          "[gpu][stream_ordered]") {
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  scclSparseConfig_t config = streamOrderedConfig("micro_sync_free");
  config.nonFinite = scclNonFiniteError;
  auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
    sccl_gpu_test::Sparsifier owned{nullptr, &scclSparsifierDestroy};
    const std::string created = sccl_gpu_test::createSparsifier(comm, kCount, config, &owned);
    if (!created.empty()) return created;
    scclSparsifier_t sp = owned.get();
    const sccl_gpu_test::Stream stream_owner;
    const cudaStream_t stream = stream_owner.get();
    DeviceBuffer<float> send(gradientOf.vector(r, 0)), out(kCount);

    // The first call allocates: refused while capturing, nothing changed.
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    const scclResult_t first =
        scclSparseAllreduce(send.get(), out.get(), kCount, scclFloat32, scclSum, sp, comm, stream);
    check(cudaStreamEndCapture(stream, &graph), "end capture");
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (first != scclInvalidUsage) return "capturing the first call was not scclInvalidUsage";

    auto callWith = [&](std::vector<float> grad) -> scclResult_t {
      send.write(grad);
      const scclResult_t result = scclSparseAllreduce(send.get(), out.get(), kCount, scclFloat32,
                                                      scclSum, sp, comm, stream);
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      return result;
    };
    if (callWith(gradientOf.vector(r, 0)) != scclSuccess) return "valid call: " + lastError(comm);
    if (allNaN(out.read())) return "a valid call gave NaN";
    // Rank 0 sends a NaN: every rank's call is enqueued, the fault comes asynchronously.
    std::vector<float> poisoned = gradientOf.vector(r, 1);
    if (r == 0) poisoned[5] = std::numeric_limits<float>::quiet_NaN();
    if (callWith(poisoned) != scclSuccess) return "the poisoned call was not enqueued";
    scclResult_t async = scclSuccess;
    if (scclSparsifierGetAsyncError(sp, &async) != scclSuccess) return "async query failed";
    if (async != scclInvalidArgument) return "non-finite values were not scclInvalidArgument";
    if (lastError(comm).find("rank 0") == std::string::npos)
      return "the fault does not name rank 0: " + lastError(comm);
    if (!allNaN(out.read())) return "the faulty call's output is not NaN";
    // Sticky: a valid call afterwards changes nothing and gives NaN.
    if (callWith(gradientOf.vector(r, 2)) != scclSuccess) return "call after the fault";
    if (!allNaN(out.read())) return "a call after the fault did not give NaN";
    // Reset clears the fault; the next (first) call runs again.
    if (scclSparsifierReset(sp) != scclSuccess) return "reset: " + lastError(comm);
    if (scclSparsifierGetAsyncError(sp, &async) != scclSuccess || async != scclSuccess)
      return "the fault survived the reset";
    if (callWith(gradientOf.vector(r, 0)) != scclSuccess) return "call after reset";
    if (allNaN(out.read())) return "the call after the reset gave NaN";
    if (scclSparsifierGetAsyncError(sp, &async) != scclSuccess || async != scclSuccess)
      return "a fault after the reset: " + lastError(comm);
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}
#endif
