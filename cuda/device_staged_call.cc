// The gather and sketch reductions on device buffers: MiCRO, ExDyna, Top-k, CLT-k, the hard
// threshold, SIDCo (and the RedSync and GaussianK estimators), and the S2 Reducer, with the
// residual in GPU memory. Not a second implementation: the call is algorithms/staged_call.cc
// (accumulate, then the reduction itself, algorithms/gather_reduction.cc or
// sketch_reduction.cc), whose kernels are the CUDA backend's and whose index, value, count,
// norm, bitmap and table arrays move through the sparsifier's device staging
// (kernels/device_staging.h, cuda/device_staging_cuda.cc), so the selections, checks, exchange
// and bytes on the wire are the host reduction's, tested on the CPU ([staged_call]).
//
// Which call runs is algorithms/staged_call.cc's choice: the resident gather call (micro, exdyna,
// cltk; one plan read back per call, none for CLT-k), the resident union call (topk,
// hard_threshold, sidco and the fitted estimators; one plan), the S2 call (nothing read back with
// the "topk" selection, the plan with "nonzero"), else the staged reduction, whose index and
// count arrays cross to the host (the configs no resident call covers: docs/gpu.md). The calls
// that read nothing back report their faults through the sparsifier's sticky fault word (mapped
// page-locked memory: fault_device for the kernels, fault_host for the host).
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
      d->residual, d->acc, d->nonfinite, d->index_fault, d->index_fault_published, d->fault_device};
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
