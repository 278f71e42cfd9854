// libsccl_cuda_call_count.so: counts what each scclSparseAllreduce call asks of the CUDA runtime,
// for the read-back and wait budgets of docs/gpu.md measured on a real device (the unit tests
// count the same things on the fake device, tests/support/fake_device.h).
//
// Use: LD_PRELOAD=libsccl_cuda_call_count.so SCCL_CALL_COUNT_OUT=counts.json <program>
// It interposes the runtime entry points the library calls (dlsym(RTLD_NEXT) forwards each):
//   launches  __cudaLaunchKernel (nvcc's launch stubs), cudaLaunchKernel, cudaMemsetAsync
//   copies    cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D, cudaMemcpy2DAsync, by direction
//             (device-to-host, host-to-device, device-to-device; cudaMemcpyDefault resolved by
//             cudaPointerGetAttributes) with their bytes
//   waits     cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, and the
//             synchronous cudaMemcpy / cudaMemcpy2D (they return when the copy is done)
// and scclSparseAllreduce itself, whose calls it brackets: the calling thread's counts between
// entry and return are that call's. The calls on one sparsifier form a run (a sparsifier address
// reused after a destroy continues the run); at exit every run is written as one JSON object per
// line in the order of first use (sparsifier, calls, and the median per call of each count over
// the run's calls after the first, which allocates). Work the runtime does for NCCL (which links
// its own runtime) is not seen.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace {

struct Counts {
  uint64_t launches = 0, d2h = 0, d2h_bytes = 0, h2d = 0, h2d_bytes = 0, d2d = 0, waits = 0;
};

// Per thread: a rank's CUDA calls are made on the thread that called scclSparseAllreduce (ranks as
// threads of one process each count their own).
thread_local Counts t_counts;

Counts snapshot() {
  return t_counts;
}

Counts difference(const Counts& a, const Counts& b) {
  return {b.launches - a.launches,   b.d2h - a.d2h, b.d2h_bytes - a.d2h_bytes, b.h2d - a.h2d,
          b.h2d_bytes - a.h2d_bytes, b.d2d - a.d2d, b.waits - a.waits};
}

struct Run {
  const void* sparsifier = nullptr;
  std::vector<Counts> calls;
};

std::mutex g_mutex;
std::vector<Run> g_runs;

// The next definition of `name` (the runtime's, the library's); null where the process has none,
// and the wrapper then returns an error instead of calling through.
template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

bool isDevicePointer(const void* p) {
  using Fn = cudaError_t (*)(cudaPointerAttributes*, const void*);
  static Fn real = next<Fn>("cudaPointerGetAttributes");
  cudaPointerAttributes a{};
  if (real == nullptr || real(&a, p) != cudaSuccess) return false;
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void countCopy(cudaMemcpyKind kind, const void* dst, const void* src, size_t bytes) {
  if (kind == cudaMemcpyDefault) {
    const bool d = isDevicePointer(dst), s = isDevicePointer(src);
    kind = s && !d   ? cudaMemcpyDeviceToHost
           : !s && d ? cudaMemcpyHostToDevice
           : s && d  ? cudaMemcpyDeviceToDevice
                     : cudaMemcpyHostToHost;
  }
  switch (kind) {
    case cudaMemcpyDeviceToHost:
      ++t_counts.d2h;
      t_counts.d2h_bytes += bytes;
      break;
    case cudaMemcpyHostToDevice:
      ++t_counts.h2d;
      t_counts.h2d_bytes += bytes;
      break;
    case cudaMemcpyDeviceToDevice: ++t_counts.d2d; break;
    default: break;
  }
}

uint64_t median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void writeRuns() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const char* path = std::getenv("SCCL_CALL_COUNT_OUT");
  FILE* out = path != nullptr ? std::fopen(path, "w") : stderr;
  if (out == nullptr) return;
  for (const Run& run : g_runs) {
    // The first call allocates the device half and sizes its buffers: left out of the medians.
    const size_t from = run.calls.size() > 1 ? 1 : 0;
    auto med = [&](uint64_t Counts::*field) {
      std::vector<uint64_t> v;
      for (size_t i = from; i < run.calls.size(); ++i) v.push_back(run.calls[i].*field);
      return static_cast<unsigned long long>(median(v));
    };
    std::fprintf(out,
                 "{\"sparsifier\": \"%p\", \"calls\": %zu, \"launches\": %llu, "
                 "\"to_host\": %llu, \"to_host_bytes\": %llu, \"to_device\": %llu, "
                 "\"to_device_bytes\": %llu, \"device_copies\": %llu, \"waits\": %llu}\n",
                 run.sparsifier, run.calls.size(), med(&Counts::launches), med(&Counts::d2h),
                 med(&Counts::d2h_bytes), med(&Counts::h2d), med(&Counts::h2d_bytes),
                 med(&Counts::d2d), med(&Counts::waits));
  }
  if (out != stderr) std::fclose(out);
}

struct AtExit {
  ~AtExit() { writeRuns(); }
} g_at_exit;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel(cudaKernel_t kernel,
                                                                      dim3 grid, dim3 block,
                                                                      void** args, size_t shared,
                                                                      cudaStream_t stream) {
  using Fn = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
  static Fn real = next<Fn>("__cudaLaunchKernel");
  if (real == nullptr) return cudaErrorNotSupported;
  ++t_counts.launches;
  return real(kernel, grid, block, args, shared, stream);
}

__attribute__((visibility("default"))) cudaError_t cudaLaunchKernel(const void* func, dim3 grid,
                                                                    dim3 block, void** args,
                                                                    size_t shared,
                                                                    cudaStream_t stream) {
  using Fn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  static Fn real = next<Fn>("cudaLaunchKernel");
  if (real == nullptr) return cudaErrorNotSupported;
  ++t_counts.launches;
  return real(func, grid, block, args, shared, stream);
}

__attribute__((visibility("default"))) cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes,
                                                                   cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, int, size_t, cudaStream_t);
  static Fn real = next<Fn>("cudaMemsetAsync");
  if (real == nullptr) return cudaErrorNotSupported;
  ++t_counts.launches;
  return real(p, value, bytes, stream);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy(void* dst, const void* src,
                                                              size_t bytes, cudaMemcpyKind kind) {
  using Fn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind);
  static Fn real = next<Fn>("cudaMemcpy");
  if (real == nullptr) return cudaErrorNotSupported;
  countCopy(kind, dst, src, bytes);
  ++t_counts.waits;
  return real(dst, src, bytes, kind);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpyAsync(void* dst, const void* src,
                                                                   size_t bytes,
                                                                   cudaMemcpyKind kind,
                                                                   cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  static Fn real = next<Fn>("cudaMemcpyAsync");
  if (real == nullptr) return cudaErrorNotSupported;
  countCopy(kind, dst, src, bytes);
  return real(dst, src, bytes, kind, stream);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy2D(void* dst, size_t dpitch,
                                                                const void* src, size_t spitch,
                                                                size_t width, size_t height,
                                                                cudaMemcpyKind kind) {
  using Fn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind);
  static Fn real = next<Fn>("cudaMemcpy2D");
  if (real == nullptr) return cudaErrorNotSupported;
  countCopy(kind, dst, src, width * height);
  ++t_counts.waits;
  return real(dst, dpitch, src, spitch, width, height, kind);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch,
                                                                     const void* src, size_t spitch,
                                                                     size_t width, size_t height,
                                                                     cudaMemcpyKind kind,
                                                                     cudaStream_t stream) {
  using Fn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind,
                             cudaStream_t);
  static Fn real = next<Fn>("cudaMemcpy2DAsync");
  if (real == nullptr) return cudaErrorNotSupported;
  countCopy(kind, dst, src, width * height);
  return real(dst, dpitch, src, spitch, width, height, kind, stream);
}

__attribute__((visibility("default"))) cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  using Fn = cudaError_t (*)(cudaStream_t);
  static Fn real = next<Fn>("cudaStreamSynchronize");
  if (real == nullptr) return cudaErrorNotSupported;
  ++t_counts.waits;
  return real(stream);
}

__attribute__((visibility("default"))) cudaError_t cudaDeviceSynchronize() {
  using Fn = cudaError_t (*)();
  static Fn real = next<Fn>("cudaDeviceSynchronize");
  if (real == nullptr) return cudaErrorNotSupported;
  ++t_counts.waits;
  return real();
}

__attribute__((visibility("default"))) cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  using Fn = cudaError_t (*)(cudaEvent_t);
  static Fn real = next<Fn>("cudaEventSynchronize");
  if (real == nullptr) return cudaErrorNotSupported;
  ++t_counts.waits;
  return real(event);
}

__attribute__((visibility("default"))) scclResult_t scclSparseAllreduce(
    const void* sendbuf, void* recvbuf, size_t count, scclDataType_t datatype, scclRedOp_t op,
    scclSparsifier_t sparsifier, scclComm_t comm, void* stream) {
  using Fn = scclResult_t (*)(const void*, void*, size_t, scclDataType_t, scclRedOp_t,
                              scclSparsifier_t, scclComm_t, void*);
  static Fn real = next<Fn>("scclSparseAllreduce");
  if (real == nullptr) return scclInternalError;
  const Counts before = snapshot();
  const scclResult_t result = real(sendbuf, recvbuf, count, datatype, op, sparsifier, comm, stream);
  const Counts call = difference(before, snapshot());
  std::lock_guard<std::mutex> lock(g_mutex);
  auto run = std::find_if(g_runs.rbegin(), g_runs.rend(),
                          [&](const Run& r) { return r.sparsifier == sparsifier; });
  if (run == g_runs.rend()) {
    g_runs.push_back({sparsifier, {}});
    run = g_runs.rbegin();
  }
  run->calls.push_back(call);
  return result;
}

}  // extern "C"
