// scclSparseAllreduce on device buffers in a build without the CUDA kernels: refused.
#include "core/error.h"
#include "core/sparsifier_device.h"

namespace sccl {

struct DeviceSparsifierState {};

void DeviceSparsifierStateDeleter::operator()(DeviceSparsifierState* state) const {
  delete state;
}

scclResult_t checkDeviceSparseAllreduce(const scclSparsifier&) {
  return fail(scclInvalidUsage,
              "sendbuf/recvbuf are GPU memory, but this build has no CUDA kernels (build with "
              "nvcc: docs/gpu.md); its kernels work on host memory");
}

scclResult_t runDeviceSparseAllreduce(SparseCall&, void*) {
  return fail(scclInternalError, "device sparse all-reduce called in a build without CUDA kernels");
}

scclResult_t deviceResidualNorm(scclSparsifier&, double* norm) {
  *norm = 0;
  return scclSuccess;
}

}  // namespace sccl
