// Device memory for the GPU tests: a typed buffer filled from and read back into host vectors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace sccl_gpu_test {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    check(cudaMalloc(reinterpret_cast<void**>(&data_), (n == 0 ? 1 : n) * sizeof(T)), "cudaMalloc");
    check(cudaMemset(data_, 0, (n == 0 ? 1 : n) * sizeof(T)), "cudaMemset");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    check(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy to device");
  }
  ~DeviceBuffer() { (void)cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return data_; }
  const T* get() const { return data_; }
  void write(const std::vector<T>& host) {
    check(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy to device");
  }
  std::vector<T> read() const {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> host(n_);
    check(cudaMemcpy(host.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost),
          "cudaMemcpy to host");
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t n_;
};

}  // namespace sccl_gpu_test
