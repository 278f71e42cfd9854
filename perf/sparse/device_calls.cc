// The CUDA side of sparse_allreduce_perf -g 1 (see device_calls.h).
#include "sparse/device_calls.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>

#include "common/cuda_device.h"
#include "common/options.h"

namespace sccl_perf {
namespace {

void cudaCheck(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw RankError(cudaErrorText(status, what));
}

// A sync_free call on device buffers returns once its work is enqueued; what went wrong while it
// ran is the sparsifier's sticky asynchronous error. Read after the call's stop event was waited
// for, so it includes this call. scclSuccess for sparsifiers without one.
void checkAsyncError(scclSparsifier_t sp, scclComm_t comm) {
  scclResult_t async = scclSuccess;
  check(scclSparsifierGetAsyncError(sp, &async), comm, "scclSparsifierGetAsyncError");
  check(async, comm, "scclSparseAllreduce (device buffers, asynchronous error)");
}

// replay()'s state of one sparsifier.
struct GraphReplay {
  bool warmed = false;             // its eager first call has run
  cudaGraphExec_t exec = nullptr;  // the captured call, once captured
};

class CudaDeviceCalls final : public DeviceCalls {
 public:
  CudaDeviceCalls() = default;
  CudaDeviceCalls(const CudaDeviceCalls&) = delete;
  CudaDeviceCalls& operator=(const CudaDeviceCalls&) = delete;
  ~CudaDeviceCalls() override {
    releaseGraphs();
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
    releaseGraphs();  // they hold the old buffers
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
    if (sp != nullptr) checkAsyncError(sp, comm);
    return us;
  }

  double replay(scclSparsifier_t sp, scclRedOp_t op, scclComm_t comm) override {
    GraphReplay& graph = graphs_[sp];
    if (!graph.warmed) {  // the first device call allocates and synchronises: never captured
      const double us = call(sp, op, comm);
      graph.warmed = true;
      return us;
    }
    if (graph.exec == nullptr) graph.exec = capture(sp, op, comm);
    cudaCheck(timer_.start(stream_), "cudaEventRecord");
    const cudaError_t launched = cudaGraphLaunch(graph.exec, stream_);
    double us = 0;
    const cudaError_t timed = timer_.stop(stream_, &us);  // waited for even after a failed launch
    cudaCheck(launched, "cudaGraphLaunch");
    cudaCheck(timed, "CUDA event timing");
    checkAsyncError(sp, comm);
    return us;
  }

  void releaseGraphs() override {
    for (auto& entry : graphs_) {
      if (entry.second.exec != nullptr) cudaGraphExecDestroy(entry.second.exec);
    }
    graphs_.clear();
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
  // One scclSparseAllreduce of the block's buffers captured on the rank's stream (thread-local
  // mode: the other ranks' threads capture their own streams meanwhile) and instantiated. The
  // stream is idle here: upload() waited for the gradient's copy.
  cudaGraphExec_t capture(scclSparsifier_t sp, scclRedOp_t op, scclComm_t comm) {
    cudaCheck(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture");
    const scclResult_t result =
        scclSparseAllreduce(send_, recv_, count_, dtype_, op, sp, comm, stream_);
    // The capture is ended even after a failed call, so that the stream leaves capture mode.
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if ((result != scclSuccess || ended != cudaSuccess) && graph != nullptr)
      cudaGraphDestroy(graph);
    check(result, comm, "scclSparseAllreduce (device buffers, captured in a CUDA graph)");
    cudaCheck(ended, "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    cudaCheck(instantiated, "cudaGraphInstantiate");
    return exec;
  }

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
  std::map<scclSparsifier_t, GraphReplay> graphs_;  // replay()'s, until releaseGraphs()
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
