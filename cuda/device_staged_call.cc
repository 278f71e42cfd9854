// The gather and sketch reductions on device buffers: MiCRO, ExDyna, Top-k, CLT-k, the hard
// threshold, SIDCo (and the RedSync and GaussianK estimators), and the S2 Reducer, with the
// residual in GPU memory. Not a second implementation: the call is algorithms/staged_call.cc
// (accumulate, then the reduction itself, algorithms/gather_reduction.cc or
// sketch_reduction.cc), whose kernels are the CUDA backend's and whose index, value, count,
// norm, bitmap and table arrays move through the sparsifier's device staging
// (kernels/device_staging.h, cuda/device_staging_cuda.cc), so the selections, checks, exchange
// and bytes on the wire are the host reduction's, tested on the CPU ([staged_call]).
//
// Steps of a gather call, on the caller's stream (d_ = device memory):
//  1. d_acc = d_residual + sendbuf, non-finite count read back (8 bytes);
//  2. the reduction: threshold (the estimator's kernels read d_acc), selection into a device
//     buffer, its count and indices read back (8 bytes each), the values too when top-k or
//     max_density_slack trims them; headers and indices exchanged from host memory (the NCCL
//     transport stages them); the k' global indices copied up, values gathered, all-reduced and
//     scattered on the device; d_acc zeroed where sent;
//  3. d_acc becomes the residual (the buffers trade roles).
// Synchronisation points: the non-finite count, the selection's count and indices, the caller's
// stream before the value all-reduce (the transport's operations run on its own stream), and the
// estimator's read-backs (top-k: the k-th value; SIDCo, RedSync, GaussianK: moments; the density
// correction: its bin counts). Bytes on the wire: the host gather reduction's.
// The sketch reduction (S2) runs algorithms/sketch_call.cc's call with everything on the device:
// with the "topk" selection it reads nothing back (its faults are asynchronous, through the
// sparsifier's sticky fault word), with "nonzero" it reads its plan back.
#include <cuda_runtime_api.h>

#include <memory>

#include "algorithms/algorithm.h"
#include "algorithms/staged_call.h"
#include "algorithms/stream_exchange.h"
#include "comm/comm.h"
#include "core/error.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"
#include "cuda/cuda_status.h"
#include "cuda/device_sparsifier_state.h"
#include "transports/stream_collectives.h"

namespace sccl {

scclResult_t runDeviceStagedCall(scclSparsifier& sp, SparseCall& call, void* stream_handle) {
  DeviceSparsifierState* d = sp.device.get();
  if (d == nullptr) SCCL_CHECK(createDeviceState(sp, stream_handle, &d));
  d->staging.setStream(static_cast<cudaStream_t>(stream_handle));
  StagedVectors vectors{
      d->residual,     d->acc,       d->nonfinite, d->index_fault, d->index_fault_published,
      d->fault_device, d->fault_host};
  // The resident gather's collectives: NCCL's on the stream, else the host transport staged.
  StreamCollectives* on_stream = sp.comm->transport->streamCollectives();
  std::unique_ptr<StreamExchange> exchange;
  if (on_stream != nullptr) {
    exchange = std::make_unique<OnStreamExchange>(*on_stream, d->staging, stream_handle);
  } else {
    exchange = std::make_unique<StagedExchange>(d->staging);
  }
  const scclResult_t result =
      runStagedCall(call, d->kernels, d->staging, vectors, stream_handle, exchange.get());
  d->residual = vectors.residual;
  d->acc = vectors.acc;
  return result;
}

}  // namespace sccl
