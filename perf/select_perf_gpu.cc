// select_perf -g 1 (see select_perf_gpu.h). The time of one call is from a CUDA event recorded
// before it to one recorded after it on the same stream: the selection kernels plus the 8-byte
// count transfer the call makes (its one synchronisation, docs/gpu.md). Median of -n calls.
#include "select_perf_gpu.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/cuda_device.h"
#include "common/timing.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {
namespace {

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "select_perf -g 1: %s\n", cudaErrorText(status, what).c_str());
  return false;
}

}  // namespace

int runDeviceSelect(const PerfOptions& options, const void* host_x, size_t max_count,
                    const std::vector<DeviceSelectCase>& cases) {
  if (usableCudaDevices("select_perf") == 0) return kSkipExitCode;
  const size_t width = dtypeSize(options.dtype);
  void *x = nullptr, *val = nullptr;
  int64_t* idx = nullptr;
  cudaStream_t stream = nullptr;
  CudaEventTimer timer;
  if (!ok(cudaMalloc(&x, max_count * width), "cudaMalloc") ||
      !ok(cudaMalloc(&val, max_count * width), "cudaMalloc") ||
      !ok(cudaMalloc(reinterpret_cast<void**>(&idx), max_count * 8), "cudaMalloc") ||
      !ok(cudaMemcpy(x, host_x, max_count * width, cudaMemcpyHostToDevice), "cudaMemcpy") ||
      !ok(cudaStreamCreate(&stream), "cudaStreamCreate") ||
      !ok(timer.create(), "cudaEventCreate")) {
    return 1;
  }
  int device = 0;
  cudaDeviceProp prop{};
  (void)cudaGetDevice(&device);
  (void)cudaGetDeviceProperties(&prop, device);
  std::printf(
      "# select_perf -g 1 on %s: scclPartitionedSelect of device buffers, CUDA events, "
      "median of %d\n",
      prop.name, options.iters);
  std::printf(
      "# copy: cudaMemcpyAsync of the same bytes device to device, timed alternately with the "
      "selection; GB/s counts its reads and writes | sel/copy: the selection's read rate over the "
      "copy's read+write rate\n");
  std::printf("# %12s %11s %8s %9s %10s %10s %8s %9s %8s %8s %8s %6s\n", "size(B)", "count",
              "density", "k", "threshold", "select(us)", "GB/s", "nsel", "copy(us)", "copyGB/s",
              "sel/copy", "#wrong");
  std::vector<int64_t> want_idx(max_count), got_idx(max_count);
  size_t total_wrong = 0;
  int failed = 0;
  for (const DeviceSelectCase& c : cases) {
    std::vector<double> times, copy_times;
    size_t nselected = 0;
    const size_t bytes_in = c.count * width;
    for (int i = 0; i < options.warmup + options.iters; ++i) {
      double copy_us = 0;
      if (!ok(timer.start(stream), "cudaEventRecord") ||
          !ok(cudaMemcpyAsync(val, x, bytes_in, cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync") ||
          !ok(timer.stop(stream, &copy_us), "CUDA event timing"))
        return 1;
      if (i >= options.warmup) copy_times.push_back(copy_us);
      if (!ok(timer.start(stream), "cudaEventRecord")) return 1;
      scclResult_t result =
          scclPartitionedSelect(x, c.count, options.dtype, 0, c.count, c.threshold, idx, val,
                                c.count, &nselected, stream);
      double us = 0;
      const cudaError_t timed = timer.stop(stream, &us);
      if (result != scclSuccess) {
        std::fprintf(stderr, "scclPartitionedSelect (device): %s\n", scclGetLastError(nullptr));
        return 1;
      }
      if (!ok(timed, "CUDA event timing")) return 1;
      if (i >= options.warmup) times.push_back(us);
    }
    std::sort(times.begin(), times.end());
    std::sort(copy_times.begin(), copy_times.end());
    const double median_us = times[times.size() / 2];
    const double copy_us = copy_times[copy_times.size() / 2];
    size_t wrong = 0;
    if (options.check) {
      size_t want_n = 0;
      if (scclPartitionedSelect(host_x, c.count, options.dtype, 0, c.count, c.threshold,
                                want_idx.data(), nullptr, c.count, &want_n,
                                nullptr) != scclSuccess ||
          !ok(cudaMemcpy(got_idx.data(), idx, nselected * 8, cudaMemcpyDeviceToHost), "cudaMemcpy"))
        return 1;
      wrong = want_n > nselected ? want_n - nselected : nselected - want_n;
      for (size_t j = 0; j < std::min(want_n, nselected); ++j) wrong += got_idx[j] != want_idx[j];
    }
    total_wrong += wrong;
    const double bytes = double(c.count * width);
    const double select_rate = gigabytesPerSecond(bytes, median_us);
    const double copy_rate = gigabytesPerSecond(2 * bytes, copy_us);
    std::printf("  %12.0f %11zu %8.4f %9zu %10.4f %10.1f %8.2f %9zu %8.1f %8.2f %8.3f %6zu\n",
                bytes, c.count, c.density, c.k, c.threshold, median_us, select_rate, nselected,
                copy_us, copy_rate, select_rate / copy_rate, wrong);
    failed += wrong != 0;
  }
  std::printf("# wrong entries: %zu %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(val);
  cudaFree(idx);
  return failed ? 1 : 0;
}

}  // namespace sccl_perf
