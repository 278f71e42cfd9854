// The shared pieces of the perf binaries' -g 1 paths (see cuda_device.h).
#include "common/cuda_device.h"

#include <cstdio>

namespace sccl_perf {

int usableCudaDevices(const char* program) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices > 0) return devices;
  std::printf("SKIP: %s -g 1: no usable CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
              program, cudaGetErrorName(status), status == cudaSuccess ? devices : 0);
  return 0;
}

std::string cudaErrorText(cudaError_t status, const char* what) {
  return std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
         ")";
}

CudaEventTimer::~CudaEventTimer() {
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

cudaError_t CudaEventTimer::create() {
  if (start_ == nullptr) {
    const cudaError_t status = cudaEventCreate(&start_);
    if (status != cudaSuccess) return status;
  }
  if (stop_ == nullptr) return cudaEventCreate(&stop_);
  return cudaSuccess;
}

cudaError_t CudaEventTimer::start(cudaStream_t stream) {
  return cudaEventRecord(start_, stream);
}

cudaError_t CudaEventTimer::stop(cudaStream_t stream, double* microseconds) {
  cudaError_t status = cudaEventRecord(stop_, stream);
  if (status == cudaSuccess) status = cudaEventSynchronize(stop_);
  float ms = 0;
  if (status == cudaSuccess) status = cudaEventElapsedTime(&ms, start_, stop_);
  *microseconds = double(ms) * 1000.0;
  return status;
}

}  // namespace sccl_perf
