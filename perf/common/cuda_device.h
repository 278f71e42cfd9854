// What the perf binaries' -g 1 paths share (select_perf, sparse_allreduce_perf): the device check
// that turns a machine without a usable GPU into one SKIP line and exit code 77, CUDA error text,
// and a timer from two CUDA events on a stream. Compiled only in builds with the CUDA kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace sccl_perf {

// The exit code CTest reports as skipped (SKIP_RETURN_CODE 77).
constexpr int kSkipExitCode = 77;

// The number of usable CUDA devices (> 0), or 0 after printing
//   SKIP: <program> -g 1: no usable CUDA device (cudaGetDeviceCount: <error name>, <n> devices)
// The return code of cudaGetDeviceCount is checked, not only the count: without a driver it fails
// (cudaErrorInsufficientDriver, cudaErrorNoDevice) and leaves the count undefined.
int usableCudaDevices(const char* program);

// "<what>: <error name> (<error text>)".
std::string cudaErrorText(cudaError_t status, const char* what);

// Times work enqueued on one stream: an event recorded before it and one after it, then a wait
// for the second. The time is the GPU's, from the first event's completion to the second's.
class CudaEventTimer {
 public:
  CudaEventTimer() = default;
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  // Creates the two events (once); cudaSuccess or the runtime's error.
  cudaError_t create();
  // Records the first event on `stream`.
  cudaError_t start(cudaStream_t stream);
  // Records the second event on `stream`, waits for it, and sets *microseconds.
  cudaError_t stop(cudaStream_t stream, double* microseconds);

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace sccl_perf
