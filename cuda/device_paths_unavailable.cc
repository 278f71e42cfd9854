// Device buffers in a build without the CUDA kernels: scclSparseAllreduce and the dense
// collectives refuse them (sparsifier/sparsifier_device.h, core/device_collectives.h).
#include "core/device_collectives.h"
#include "core/error.h"
#include "sparsifier/hierarchy_memory.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"

namespace sccl {

struct DeviceSparsifierState {};

void DeviceSparsifierStateDeleter::operator()(DeviceSparsifierState* state) const {
  delete state;
}

scclResult_t checkDeviceSparseAllreduce(const scclSparsifier&, void*) {
  return fail(scclInvalidUsage,
              "sendbuf/recvbuf are GPU memory, but this build has no CUDA kernels (build with "
              "nvcc: docs/gpu.md); its kernels work on host memory");
}

scclResult_t runDeviceSparseAllreduce(scclSparsifier&, SparseCall&, void*) {
  return fail(scclInternalError, "device sparse all-reduce called in a build without CUDA kernels");
}

scclResult_t deviceAsyncError(const scclSparsifier&, scclResult_t* result) {
  *result = scclSuccess;  // no device call ever ran
  return scclSuccess;
}

scclResult_t deviceRefreshStats(scclSparsifier&) {
  return scclSuccess;
}

scclResult_t deviceCheckpointState(scclSparsifier& sp, uint64_t* call_number) {
  *call_number = sp.iteration;  // no device call ever ran
  return scclSuccess;
}

scclResult_t deviceResidualNorm(scclSparsifier&, double* norm) {
  *norm = 0;
  return scclSuccess;
}

scclResult_t deviceExportResidual(scclSparsifier&, void*) {
  return fail(scclInternalError, "device residual read in a build without CUDA kernels");
}

scclResult_t createDeviceHierarchyMemory(scclSparsifier&, std::unique_ptr<HierarchyMemory>*) {
  return fail(scclInternalError, "device hierarchy memory called in a build without CUDA kernels");
}

scclResult_t prepareDeviceTransport(scclComm*) {
  return fail(scclInvalidUsage,
              "buffers are GPU memory, but this build has no CUDA kernels (build with nvcc: "
              "docs/gpu.md)");
}

scclResult_t prepareDeviceCollective(scclComm*, void*) {
  return fail(scclInvalidUsage,
              "buffers are GPU memory, but this build has no CUDA kernels (build with nvcc: "
              "docs/gpu.md); its collectives work on host memory");
}

scclResult_t deviceDivideByRanks(void*, size_t, scclDataType_t, int, void*) {
  return fail(scclInternalError, "device division called in a build without CUDA kernels");
}

scclResult_t deviceCopy(void*, const void*, size_t, void*) {
  return fail(scclInternalError, "device copy called in a build without CUDA kernels");
}

}  // namespace sccl
