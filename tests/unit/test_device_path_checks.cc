// The entry checks of the device paths (scclSparseAllreduce: sparsifier/sparsifier_device.h; the
// dense collectives: core/device_collectives.h), which run before anything touches a buffer, so
// they are testable without a GPU: a reduction without a device path (dense), a residual already in
// host memory and a stream-ordered call over a transport without stream collectives are
// scclInvalidUsage naming what is missing; the communicator stays usable afterwards. Device
// buffers over a host transport go through pinned staging (its logic: test_pinned_staging_
// transport.cc). (The device paths themselves are the GPU suite's
// tests/gpu/test_gpu_sparse_allreduce.cc and test_gpu_dense_collectives.cc.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "comm/comm.h"
#include "core/device_collectives.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"
#include "sccl_build_config.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_test;

namespace {

bool mentions(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("device sparse allreduce refuses what it cannot run before any side effect",
          "[sparse][device_checks]") {
  const size_t count = 4096;
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t dense = sparseConfig("dense", 0.01);
    scclSparseConfig_t sync_free = sparseConfig("micro_sync_free", 0.01);
    scclSparseConfig_t ordered = sparseConfig("micro_sync_free", 0.01);
    ordered.streamOrdered = 1;
    scclSparsifier_t dense_sp = nullptr, sync_free_sp = nullptr, ordered_sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&dense_sp, comm, count, scclFloat32, &dense),
                         scclSuccess, "create dense") ||
        !log.checkResult(scclSparsifierCreate(&sync_free_sp, comm, count, scclFloat32, &sync_free),
                         scclSuccess, "create micro_sync_free") ||
        !log.checkResult(scclSparsifierCreate(&ordered_sp, comm, count, scclFloat32, &ordered),
                         scclSuccess, "create stream-ordered micro_sync_free"))
      return;
    std::vector<float> grad(count), out(count);
    for (size_t i = 0; i < count; ++i) grad[i] = gradientValue(3, rank, 0, i);

    log.checkResult(sccl::checkDeviceSparseAllreduce(*dense_sp, nullptr), scclInvalidUsage,
                    "the dense preset");
    const std::string dense_text = scclGetLastError(nullptr);
#if SCCL_BUILD_CUDA_KERNELS
    log.check(mentions(dense_text, "'dense'") && mentions(dense_text, "gather") &&
                  mentions(dense_text, "sketch") && mentions(dense_text, "sync_free"),
              "the refusal names the reduction and what runs on the device: " + dense_text);
    // The stream-ordered call needs NCCL's stream collectives; the in-process transport carries
    // device buffers through pinned staging, which waits on the host: refused before anything
    // (the staging included) is created.
    log.checkResult(sccl::checkDeviceSparseAllreduce(*ordered_sp, nullptr), scclInvalidUsage,
                    "stream-ordered micro_sync_free over the local transport");
    const std::string transport_text = scclGetLastError(nullptr);
    log.check(mentions(transport_text, "'local'") && mentions(transport_text, "nccl") &&
                  mentions(transport_text, "streamOrdered = 0"),
              "the refusal names the transport and the way out: " + transport_text);
    log.check(comm->device_transport == nullptr, "the refusal created the pinned staging");
#else
    log.check(mentions(dense_text, "no CUDA kernels"),
              "the refusal names the build: " + dense_text);
#endif
    // The device branch of the call: refused as an invalid usage, no state changed, the
    // communicator healthy, and a host call afterwards runs as call 0.
    scclSparsifier_t refused_sp = SCCL_BUILD_CUDA_KERNELS ? ordered_sp : sync_free_sp;
    log.checkResult(sccl::sparseAllreduce(refused_sp, grad.data(), out.data(), scclSum, true),
                    scclInvalidUsage, "the device branch over the local transport");
    log.check(refused_sp->iteration == 0 && refused_sp->device == nullptr,
              "the refused call changed the sparsifier");
    scclResult_t async = scclSuccess;
    scclCommGetAsyncError(comm, &async);
    log.checkResult(async, scclSuccess, "the communicator's state after the refusal");
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum,
                                        sync_free_sp, comm, nullptr),
                    scclSuccess, "a host call after the refusal");
#if SCCL_BUILD_CUDA_KERNELS
    // After a host call the residual lives in host memory: a device call is refused for that.
    log.checkResult(sccl::checkDeviceSparseAllreduce(*sync_free_sp, nullptr), scclInvalidUsage,
                    "device call after a host call");
    const std::string host_text = scclGetLastError(nullptr);
    log.check(mentions(host_text, "host memory since its first call"),
              "the refusal says where the residual is: " + host_text);
#endif
    log.checkResult(scclSparsifierDestroy(dense_sp), scclSuccess, "destroy dense");
    log.checkResult(scclSparsifierDestroy(sync_free_sp), scclSuccess, "destroy micro_sync_free");
    log.checkResult(scclSparsifierDestroy(ordered_sp), scclSuccess, "destroy stream-ordered");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("dense collectives on device buffers over a host transport stage through pinned memory",
          "[device_checks]") {
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    const scclResult_t prepared = sccl::prepareDeviceCollective(comm, nullptr);
    const std::string text = scclGetLastError(nullptr);
#if SCCL_BUILD_CUDA_KERNELS
    // With a GPU the staging is created and carries device memory; without a driver (the CI
    // machines) creating its copy stream fails with the CUDA error, and nothing is kept.
    if (prepared == scclSuccess) {
      log.check(comm->device_transport != nullptr &&
                    comm->device_transport->capabilities().device_memory &&
                    mentions(comm->device_transport->name(), "local+pinned"),
                "the pinned staging over the local transport");
    } else {
      log.checkResult(prepared, scclUnhandledCudaError, "the staging without a CUDA driver");
      log.check(mentions(text, "pinned staging") && comm->device_transport == nullptr,
                "the failure names the staging and keeps nothing: " + text);
    }
#else
    log.checkResult(prepared, scclInvalidUsage, "a device collective in a build without kernels");
    log.check(mentions(text, "no CUDA kernels"), "the refusal names the build: " + text);
#endif
    scclResult_t async = scclSuccess;
    scclCommGetAsyncError(comm, &async);
    log.checkResult(async, scclSuccess, "the communicator's state afterwards");
    std::vector<float> value{float(rank + 1)}, sum(1);
    log.checkResult(scclAllReduce(value.data(), sum.data(), 1, scclFloat32, scclSum, comm, nullptr),
                    scclSuccess, "a host all-reduce afterwards");
    log.check(sum[0] == 3.0f, "host all-reduce result");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
