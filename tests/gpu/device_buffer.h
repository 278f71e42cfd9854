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

// Host bytes into device memory, landed before this returns. A plain cudaMemcpy from pageable
// memory may return once the bytes are staged, before the DMA reaches `device` (and cudaMemset is
// asynchronous); both run on the legacy default stream, which a non-blocking stream - every
// test rank's - does not wait for. Without the device-wide wait, a call enqueued next can read
// the previous gradient (the bundle's first multi-process run on an H100 did, 2026-11-27).
inline void upload(void* device, const void* host, size_t bytes, const char* what) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), what);
  check(cudaDeviceSynchronize(), what);
}

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    check(cudaMalloc(reinterpret_cast<void**>(&data_), (n == 0 ? 1 : n) * sizeof(T)), "cudaMalloc");
    check(cudaMemset(data_, 0, (n == 0 ? 1 : n) * sizeof(T)), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaMemset");  // see upload()
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    upload(data_, host.data(), host.size() * sizeof(T), "cudaMemcpy to device");
  }
  ~DeviceBuffer() { (void)cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return data_; }
  const T* get() const { return data_; }
  void write(const std::vector<T>& host) {
    upload(data_, host.data(), host.size() * sizeof(T), "cudaMemcpy to device");
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
