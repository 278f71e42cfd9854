// scclSparseAllreduce on device buffers: the sparsifier's residual in GPU memory, the kernels of
// the CUDA backend on the caller's stream, the collectives on a transport that carries device
// memory (NCCL). Implemented by cuda/device_sparse_allreduce.cc in builds with the CUDA kernels
// and by cuda/device_paths_unavailable.cc (every call refused) in the others.
// Design and synchronisation points: docs/gpu.md.
#pragma once

#include <memory>

#include "algorithms/algorithm.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// The device half of a sparsifier: residual, accumulator, slot buffers and the CUDA backend's
// workspace, created at the sparsifier's first call on device buffers.
struct DeviceSparsifierState;
struct DeviceSparsifierStateDeleter {
  void operator()(DeviceSparsifierState* state) const;
};

// Whether this sparsifier can run on device buffers (its reduction and estimator, this build, the
// transport; a stream-ordered sparsifier's first call must not be captured on `stream`):
// scclInvalidUsage naming what is missing, with no side effect.
scclResult_t checkDeviceSparseAllreduce(const scclSparsifier& sp, void* stream);

// One call on device buffers (call.sendbuf, call.recvbuf), ordered on `stream`: accumulate,
// select, exchange, write recvbuf, swap in the new residual (in device memory), record the
// counts and bytes in `call`, let the estimator and search space observe the counts.
scclResult_t runDeviceSparseAllreduce(scclSparsifier& sp, SparseCall& call, void* stream);

// The sticky fault of a stream-ordered sparsifier (scclSparsifierGetAsyncError): *result is
// scclSuccess, or the fault's code with its text set for scclGetLastError. Never waits.
scclResult_t deviceAsyncError(const scclSparsifier& sp, scclResult_t* result);

// A stream-ordered sparsifier's statistics and rank counts from the device (the host only
// enqueued its calls): waits for the device, reads the last call's headers, the threshold and the
// totals into sp.stats and its rank counts. Nothing for other sparsifiers.
scclResult_t deviceRefreshStats(scclSparsifier& sp);

// Checkpoints (sparsifier/sparsifier_state.h), before the state is written: a resident sync_free
// sparsifier's threshold, partitions and call number, which its calls keep on the device, into
// the host's estimator and search space and *call_number (residentSyncFreeCheckpointState; waits
// for the device); for other sparsifiers *call_number = sp.iteration and nothing changes.
scclResult_t deviceCheckpointState(scclSparsifier& sp, uint64_t* call_number);

// Checkpoints (sparsifier/sparsifier_state.h): waits for the device and copies the device residual
// (count elements of the residual type) into `host`. The residual a checkpoint loads goes to the
// host buffer, and the next call on device buffers starts its device half from it
// (createDeviceState uploads the host residual, and the sync_free call's threshold, partitions and
// call number from the host's objects).
scclResult_t deviceExportResidual(scclSparsifier& sp, void* host);

// The device memory of a hierarchical sparsifier (sparsifier/node_hierarchy.h, "hierarchy":
// "node"): the node's vectors in device memory, the CUDA backend's kernels, the transport inside
// the node for device buffers (NCCL, else pinned staging), the inner preset through its own
// device call. Collective over the node's ranks only where the device transport is created.
class HierarchyMemory;
scclResult_t createDeviceHierarchyMemory(scclSparsifier& sp, std::unique_ptr<HierarchyMemory>* out);

// L2 norm of the device residual (0 when the sparsifier has never run on the device).
scclResult_t deviceResidualNorm(scclSparsifier& sp, double* norm);

}  // namespace sccl
