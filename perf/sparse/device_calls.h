// sparse_allreduce_perf -g 1: the calls of a rank on its GPU. The gradients are generated on the
// host as on the host path (sparse/inputs.h) and copied to a device send buffer before each call
// (untimed); the call runs on device buffers and a stream of the rank's own, between two CUDA
// events; a stream-ordered sparsifier's call may instead be a replay of a CUDA graph (replay).
// The driver and the check pass use this interface only, so they build (and the host path
// runs) without CUDA; the implementation, sparse/device_calls.cc, is built with the CUDA kernels.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "sparse/bench.h"

namespace sccl_perf {

class DeviceCalls {
 public:
  virtual ~DeviceCalls() = default;

  // Allocates the send and receive buffers of a block of `count` elements (cudaMalloc, once per
  // block; the previous block's are freed first, and its graphs destroyed).
  virtual void allocate(size_t count, scclDataType_t dtype) = 0;
  // Copies a gradient of the block (host memory) into the send buffer and waits for the copy, so
  // that no timed call includes it.
  virtual void upload(const void* gradient) = 0;
  // One call on the device buffers and the rank's stream: scclSparseAllreduce with `sp`, or the
  // dense scclAllReduce when sp is null. Returns its time in microseconds, from a CUDA event
  // recorded on the stream before the call to one recorded after it (waited for). Throws
  // RankError when the call or CUDA fails, or when a stream-ordered call reports an asynchronous
  // error (scclSparsifierGetAsyncError, read once the call has run).
  virtual double call(scclSparsifier_t sp, scclRedOp_t op, scclComm_t comm) = 0;
  // One call of `sp` (streamOrdered = 1) as a CUDA graph replay, timed as call(): the first call
  // of `sp` since allocate() runs eager (it allocates the sparsifier's device state, which must
  // not be captured); the second is captured into a graph kept for `sp` (the capture and the
  // instantiation are not timed) and launched; every later one launches that graph between the
  // two events. The graph holds the block's buffers, `op` and `comm`: they stay the same for a
  // sparsifier. Checks the sparsifier's asynchronous error after every call; throws RankError
  // as call() does.
  virtual double replay(scclSparsifier_t sp, scclRedOp_t op, scclComm_t comm) = 0;
  // Destroys the graphs of replay(). Runs before their sparsifiers are destroyed: a graph holds
  // their device memory, and a later sparsifier may get the address of a destroyed one.
  virtual void releaseGraphs() = 0;
  // Copies the receive buffer into `output` (host memory of the block's size).
  virtual void download(void* output) = 0;
  // "GPU <ordinal> (<name>)".
  virtual std::string describe() const = 0;
};

#if SCCL_PERF_WITH_CUDA
// Makes device rank % devices current for the calling thread; runs before the rank's
// communicator is created (NCCL binds the current device then). False (with a message on
// stderr) when CUDA refuses.
bool selectRankDevice(int rank);

// The calls of the rank on the current device: a non-blocking stream and the two events.
// Throws RankError when CUDA fails.
std::unique_ptr<DeviceCalls> openDeviceCalls();
#endif

}  // namespace sccl_perf
