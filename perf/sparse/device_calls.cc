// The CUDA side of sparse_allreduce_perf -g 1 (see device_calls.h).
#include "sparse/device_calls.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "common/cuda_device.h"
#include "common/options.h"

namespace sccl_perf {
namespace {

void cudaCheck(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw RankError(cudaErrorText(status, what));
}

class CudaDeviceCalls final : public DeviceCalls {
 public:
  CudaDeviceCalls() = default;
  CudaDeviceCalls(const CudaDeviceCalls&) = delete;
  CudaDeviceCalls& operator=(const CudaDeviceCalls&) = delete;
  ~CudaDeviceCalls() override {
    release();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  void open() {
    cudaCheck(cudaGetDevice(&device_), "cudaGetDevice");
    cudaDeviceProp prop{};
    cudaCheck(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    // Non-blocking: nothing of the legacy default stream (which other libraries may use) is
    // ordered into the timed calls.
    cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags");
    cudaCheck(timer_.create(), "cudaEventCreate");
  }

  void allocate(size_t count, scclDataType_t dtype) override {
    release();
    count_ = count;
    dtype_ = dtype;
    bytes_ = count * dtypeSize(dtype);
    cudaCheck(cudaMalloc(&send_, bytes_), "cudaMalloc (send buffer)");
    cudaCheck(cudaMalloc(&recv_, bytes_), "cudaMalloc (receive buffer)");
  }

  void upload(const void* gradient) override {
    cudaCheck(cudaMemcpyAsync(send_, gradient, bytes_, cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (gradient to the GPU)");
    cudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  double call(scclSparsifier_t sp, scclRedOp_t op, scclComm_t comm) override {
    cudaCheck(timer_.start(stream_), "cudaEventRecord");
    const scclResult_t result =
        sp != nullptr ? scclSparseAllreduce(send_, recv_, count_, dtype_, op, sp, comm, stream_)
                      : scclAllReduce(send_, recv_, count_, dtype_, op, comm, stream_);
    // The second event is recorded and waited for even after a failed call, so that the stream
    // holds nothing of this call when the error is reported.
    double us = 0;
    const cudaError_t timed = timer_.stop(stream_, &us);
    check(
        result, comm,
        sp != nullptr ? "scclSparseAllreduce (device buffers)" : "scclAllReduce (device buffers)");
    cudaCheck(timed, "CUDA event timing");
    return us;
  }

  void download(void* output) override {
    cudaCheck(cudaMemcpyAsync(output, recv_, bytes_, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (output to the host)");
    cudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  std::string describe() const override {
    return "GPU " + std::to_string(device_) + " (" + name_ + ")";
  }

 private:
  void release() {
    if (send_ != nullptr) cudaFree(send_);
    if (recv_ != nullptr) cudaFree(recv_);
    send_ = recv_ = nullptr;
  }

  int device_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  CudaEventTimer timer_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  size_t count_ = 0, bytes_ = 0;
  scclDataType_t dtype_ = scclFloat32;
};

}  // namespace

bool selectRankDevice(int rank) {
  int devices = 0;
  cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices < 1) status = cudaErrorNoDevice;
  if (status == cudaSuccess) status = cudaSetDevice(rank % devices);
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "rank %d: %s\n", rank, cudaErrorText(status, "selecting its GPU").c_str());
  return false;
}

std::unique_ptr<DeviceCalls> openDeviceCalls() {
  auto calls = std::make_unique<CudaDeviceCalls>();
  calls->open();
  return calls;
}

}  // namespace sccl_perf
