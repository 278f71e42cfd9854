// The device memory of a hierarchical sparsifier (sparsifier/hierarchy_memory.h) on the CUDA
// runtime: a CUDA backend and a staging of its own hold the node's vectors and run its copies,
// non-finite count, NaN fill and division on the call's stream; the transport inside the node is
// the node communicator's transport for device buffers (NCCL, else pinned staging); the inner
// preset runs through its own device call (device_sparse_allreduce.cc). The call's steps are
// sparsifier/node_hierarchy.cc's, the same as on host buffers.
#include <cuda_runtime_api.h>

#include <memory>

#include "comm/comm.h"
#include "core/device_collectives.h"
#include "core/error.h"
#include "cuda/cuda_kernels.h"
#include "cuda/device_staging_cuda.h"
#include "sparsifier/hierarchy_memory.h"
#include "sparsifier/node_hierarchy.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_device.h"

namespace sccl {
namespace {

// Constructed before the StagedHierarchyMemory that refers to them.
struct CudaHierarchyParts {
  CudaKernels kernels;
  CudaDeviceStaging staging{kernels};
};

class CudaHierarchyMemory final : private CudaHierarchyParts, public StagedHierarchyMemory {
 public:
  explicit CudaHierarchyMemory(Transport& intra)
      : StagedHierarchyMemory(kernels, staging, intra,
                              [](scclSparsifier* inner, void* chunk, void* stream) {
                                return sparseAllreduce(inner, chunk, chunk, scclSum, true, stream);
                              }) {}
  // Calls enqueued on the caller's streams may still use the buffers.
  ~CudaHierarchyMemory() override { (void)cudaDeviceSynchronize(); }
  void setStream(void* stream) override {
    StagedHierarchyMemory::setStream(stream);
    staging.setStream(static_cast<cudaStream_t>(stream));
  }
};

}  // namespace

scclResult_t createDeviceHierarchyMemory(scclSparsifier& sp,
                                         std::unique_ptr<HierarchyMemory>* out) {
  NodeHierarchy& h = *sp.hierarchy;
  SCCL_CHECK(prepareDeviceTransport(h.intra));
  auto memory = std::make_unique<CudaHierarchyMemory>(deviceTransportOf(h.intra));
  SCCL_CHECK(memory->reserve(h, sp.count, sp.dtype));
  *out = std::move(memory);
  return scclSuccess;
}

}  // namespace sccl
