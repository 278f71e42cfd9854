// Ranks of the GPU tests: one thread per GPU (at most 8), each with its own device and a
// communicator over the NCCL transport (one GPU: a single-rank communicator).
#pragma once

#include <cuda_runtime_api.h>

#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_buffer.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_gpu_test {

inline int gpuRankCount() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) return 0;
  return devices < 8 ? devices : 8;
}

// A non-blocking stream of the calling thread's device, destroyed with the object (also when a
// rank's body returns early with a failure).
class Stream {
 public:
  Stream() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~Stream() { (void)cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

using Sparsifier = std::unique_ptr<scclSparsifier, scclResult_t (*)(scclSparsifier_t)>;

// A float32 sparsifier of `count` elements on comm; "" on success, else what failed.
inline std::string createSparsifier(scclComm_t comm, size_t count, const scclSparseConfig_t& config,
                                    Sparsifier* out) {
  scclSparsifier_t sp = nullptr;
  if (scclSparsifierCreate(&sp, comm, count, scclFloat32, &config) != scclSuccess)
    return std::string("scclSparsifierCreate: ") + scclGetLastError(comm);
  out->reset(sp);
  return "";
}

// Runs body(rank, comm) -> failure text ("" when it passed) on nranks threads, each with a
// communicator of `config`; rank r first selects device device_of(r) (none when negative).
// Returns the failures, each prefixed with its rank.
template <typename DeviceOf, typename Body>
std::vector<std::string> onRankThreads(int nranks, const scclConfig_t& config, DeviceOf device_of,
                                       Body body) {
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) return {"scclGetUniqueId failed"};
  std::vector<std::string> failures(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        if (device_of(r) >= 0) check(cudaSetDevice(device_of(r)), "cudaSetDevice");
        scclComm_t comm = nullptr;
        if (scclCommInitRankConfig(&comm, nranks, id, r, &config) != scclSuccess) {
          failures[size_t(r)] = std::string("init: ") + scclGetLastError(nullptr);
          return;
        }
        failures[size_t(r)] = body(r, comm);
        if (scclCommDestroy(comm) != scclSuccess && failures[size_t(r)].empty())
          failures[size_t(r)] = "scclCommDestroy failed";
      } catch (const std::exception& e) {
        failures[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> out;
  for (int r = 0; r < nranks; ++r)
    if (!failures[size_t(r)].empty())
      out.push_back("rank " + std::to_string(r) + ": " + failures[size_t(r)]);
  return out;
}

// One rank per GPU over the NCCL transport, rank r on device r.
template <typename Body>
std::vector<std::string> onEveryGpu(int nranks, Body body) {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.transport = "nccl";
  config.timeoutMs = 60000;
  return onRankThreads(nranks, config, [](int r) { return r; }, body);
}

}  // namespace sccl_gpu_test
