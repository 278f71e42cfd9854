// Creation of the NCCL transport: the ncclUniqueId travels through the bootstrap (an all-gather
// in which only rank 0's entry is used), then ncclCommInitRankConfig with blocking = 0 and a poll
// of ncclCommGetAsyncError until the communicator is ready or the deadline passes.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_status.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/nccl/nccl_transport.h"
#include "transports/nccl/nccl_transport_impl.h"

namespace sccl {

scclResult_t ncclFailure(ncclResult_t result, ncclComm_t comm, const char* what) {
  const char* detail = comm != nullptr ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  return fail(result == ncclInvalidArgument || result == ncclInvalidUsage ? scclInvalidArgument
              : result == ncclRemoteError                                 ? scclRemoteError
              : result == ncclSystemError                                 ? scclSystemError
                                                                          : scclUnhandledCudaError,
              "%s: NCCL error %d (%s)%s%s", what, static_cast<int>(result),
              ncclGetErrorString(result), detail != nullptr && detail[0] != '\0' ? ": " : "",
              detail != nullptr ? detail : "");
}

scclResult_t createNcclTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out) {
  SCCL_REQUIRE_ARG(setup.bootstrap != nullptr, "nccl transport: no bootstrap");
  int device = -1;
  SCCL_CUDA_CHECK(cudaGetDevice(&device),
                  "nccl transport: no current CUDA device (call cudaSetDevice before "
                  "scclCommInitRank)");
  ncclUniqueId mine{};
  if (setup.rank == 0) {
    ncclResult_t result = ncclGetUniqueId(&mine);
    if (result != ncclSuccess) return ncclFailure(result, nullptr, "ncclGetUniqueId");
  }
  std::vector<ncclUniqueId> all(static_cast<size_t>(setup.nranks));
  SCCL_CHECK(setup.bootstrap->allGather(&mine, all.data(), sizeof(ncclUniqueId)));

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every NCCL call returns at once; we poll against our deadline
  ncclComm_t comm = nullptr;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(setup.timeout_ms);
  ncclResult_t result = ncclCommInitRankConfig(&comm, setup.nranks, all[0], setup.rank, &config);
  while (result == ncclInProgress) {
    if (std::chrono::steady_clock::now() > deadline) {
      (void)ncclCommAbort(comm);
      return fail(scclTimeout,
                  "nccl transport: ncclCommInitRankConfig rank %d of %d did not complete within "
                  "%lld ms (a rank missing, or the network unreachable)",
                  setup.rank, setup.nranks, static_cast<long long>(setup.timeout_ms));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    ncclResult_t async = ncclSuccess;
    result = ncclCommGetAsyncError(comm, &async);
    if (result == ncclSuccess) result = async;
  }
  if (result != ncclSuccess) {
    scclResult_t failure = ncclFailure(result, comm, "ncclCommInitRankConfig");
    if (comm != nullptr) (void)ncclCommAbort(comm);
    return failure;
  }
  cudaStream_t stream = nullptr;
  const cudaError_t status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (status != cudaSuccess) {
    (void)ncclCommAbort(comm);
    return cudaFailure(status, "nccl transport: cudaStreamCreateWithFlags");
  }
  *out = std::make_unique<NcclTransport>(comm, stream, setup.rank, setup.nranks, setup.timeout_ms);
  return scclSuccess;
}

}  // namespace sccl
