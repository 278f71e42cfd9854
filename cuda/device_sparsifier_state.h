// The device half of a sparsifier (sparsifier/sparsifier_device.h), shared by the device paths: the
// gather and sketch reductions (device_staged_call.cc) and the two of the sync_free call, the
// read-back path (device_sparse_allreduce.cc) and the stream-ordered one
// (device_sparse_allreduce_stream_ordered.cc). Allocated once, at the sparsifier's first call on
// device buffers: every size follows from the fixed capacity, so a training loop's steady state
// (and a captured CUDA graph) allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "cuda/cuda_kernels.h"
#include "cuda/device_staging_cuda.h"
#include "cuda/dispatch.h"
#include "cuda/workspace.h"

namespace sccl {

struct DeviceSparsifierState {
  DeviceSparsifierState() = default;
  ~DeviceSparsifierState();
  DeviceSparsifierState(const DeviceSparsifierState&) = delete;
  DeviceSparsifierState& operator=(const DeviceSparsifierState&) = delete;

  CudaKernels kernels;
  CudaDeviceStaging staging{kernels};  // the gather and sketch reductions' device arrays
  // Two buffers for residual and accumulator. The read-back path swaps their roles after each
  // completed call; the stream-ordered path keeps them fixed (a graph holds fixed pointers) and
  // copies the accumulator into the residual when a call completes.
  CudaWorkspace buffer_a, buffer_b;
  void* residual = nullptr;
  void* acc = nullptr;
  // slot (4 + capacity words), gathered slots (n of them), values (n * capacity), the
  // stream-ordered all-reduce's scratch (n * n * capacity) and the small words below.
  CudaWorkspace slot_memory, gathered_memory, values_memory, reduce_scratch_memory, small_memory;
  int64_t* slot = nullptr;
  int64_t* gathered = nullptr;
  void* values = nullptr;
  void* reduce_scratch = nullptr;
  uint64_t* ranges = nullptr;        // 2 n words: each rank's range at this call
  uint64_t* partitions = nullptr;    // 2 n words: the search space's partitions (stream-ordered)
  int64_t* exdyna_arrays = nullptr;  // 4 n words: ExDyna's blocks, first blocks, scratch
  double* threshold = nullptr;
  uint64_t* nonfinite = nullptr;
  uint32_t* bad = nullptr;
  uint32_t* index_fault = nullptr;  // the resident gather's (kernels/shared/gather_plan.h)
  // That word published for scclSparsifierGetAsyncError: pinned host memory mapped into the
  // device (the host reads it without waiting), and its device address.
  uint32_t* index_fault_host = nullptr;
  uint32_t* index_fault_published = nullptr;
  uint64_t* sequence = nullptr;  // the call number written into the slot header
  uint32_t* status = nullptr;    // the stream-ordered call's decision (dispatch.h)
  cuda_dispatch::StreamOrderedTotals* totals = nullptr;
  // The sticky fault of the stream-ordered path (kernels/shared/sync_free_async_fault.h): pinned
  // host memory, read by the host without waiting, written by a kernel through its device alias.
  uint64_t* fault_host = nullptr;
  uint64_t* fault_device = nullptr;

  uint64_t capacity = 0;
  size_t select_items = 0;  // positions the stream-ordered selection scans: the largest range
  bool rebalances = false;  // exdyna: the partitions move on the device after each call
  ExDynaRebalanceRule exdyna_rule;
  bool stream_ordered = false;
  std::vector<int64_t> headers;  // host copy of the n slot headers (read-back path)
};

// Allocates and initialises the device half at the sparsifier's first device call (not while the
// stream is being captured: it allocates and synchronises). Sets sp.device.
scclResult_t createDeviceState(scclSparsifier& sp, DeviceSparsifierState** out);

// The stream-ordered path's entry checks (part of checkDeviceSparseAllreduce, no side effect): a
// transport with collectives on a stream, and a first call that is not being captured.
scclResult_t checkStreamOrderedCall(const scclSparsifier& sp, void* stream);

// One call of the gather reduction (MiCRO, ExDyna, Top-k, CLT-k, hard threshold, SIDCo, ...) or
// the sketch reduction (S2) on device buffers: accumulate on the device, then the reduction itself
// with the CUDA kernels and the device staging of its arrays (cuda/device_staged_call.cc).
scclResult_t runDeviceStagedCall(SparseCall& call, void* stream);

// One stream-ordered call (config stream_ordered): every step enqueued on `stream`, nothing read
// back, so the call can be captured in a CUDA graph; faults go to the sticky fault word.
scclResult_t runStreamOrderedSparseAllreduce(SparseCall& call, void* stream);

}  // namespace sccl
