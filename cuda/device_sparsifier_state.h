// The device half of a sparsifier (sparsifier/sparsifier_device.h), shared by the device paths:
// the gather and sketch reductions (device_staged_call.cc, the resident gather among them) and the
// resident sync_free call (device_sparse_allreduce.cc, algorithms/resident_sync_free.cc).
// Allocated once, at the sparsifier's first call on device buffers: every size follows from the
// fixed capacity, so a training loop's steady state (and a captured CUDA graph) allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "algorithms/resident_sync_free.h"
#include "cuda/cuda_kernels.h"
#include "cuda/device_staging_cuda.h"
#include "cuda/workspace.h"

namespace sccl {

struct DeviceSparsifierState {
  DeviceSparsifierState() = default;
  ~DeviceSparsifierState();
  DeviceSparsifierState(const DeviceSparsifierState&) = delete;
  DeviceSparsifierState& operator=(const DeviceSparsifierState&) = delete;

  CudaKernels kernels;
  CudaDeviceStaging staging{kernels};  // the reductions' device arrays and page-locked buffers
  // The statistics' kernels (the residual's norm), with a workspace of their own: a CUDA graph
  // captured from a call holds the addresses of `kernels`' workspace, which must not grow or
  // move between its replays.
  CudaKernels statistics_kernels;
  // Two buffers for residual and accumulator: they trade roles after each call, except in a
  // stream-ordered sync_free sparsifier (a graph holds fixed pointers), which copies instead.
  CudaWorkspace buffer_a, buffer_b;
  void* residual = nullptr;
  void* acc = nullptr;
  CudaWorkspace small_memory;
  uint64_t* nonfinite = nullptr;
  uint32_t* index_fault = nullptr;  // the resident gather's (kernels/shared/gather_plan.h)
  // That word published for scclSparsifierGetAsyncError: pinned host memory mapped into the
  // device (the host reads it without waiting), and its device address.
  uint32_t* index_fault_host = nullptr;
  uint32_t* index_fault_published = nullptr;
  // The resident sync_free call's state and its sticky fault word (pinned, mapped: the kernels
  // write it through fault_device, the host reads fault_host without waiting).
  ResidentSyncFree sync_free;
  uint64_t* fault_host = nullptr;
  uint64_t* fault_device = nullptr;
};

// Allocates and initialises the device half at the sparsifier's first device call (not while the
// stream is being captured: it allocates and synchronises). Sets sp.device.
scclResult_t createDeviceState(scclSparsifier& sp, void* stream, DeviceSparsifierState** out);

// One call of the gather reduction (MiCRO, ExDyna, Top-k, CLT-k, hard threshold, SIDCo, ...) or
// the sketch reduction (S2) on device buffers: accumulate on the device, then the reduction itself
// with the CUDA kernels and the device staging of its arrays (cuda/device_staged_call.cc).
scclResult_t runDeviceStagedCall(scclSparsifier& sp, SparseCall& call, void* stream);

}  // namespace sccl
