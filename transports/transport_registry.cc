// The transports of this build. A new transport adds one line here and its directory.
#include "transports/transport_registry.h"

#include "sccl_build_config.h"
#include "transports/local/local_transport.h"
#if SCCL_BUILD_WITH_MPI
#include "transports/mpi/mpi_transport_create.h"
#endif
#if SCCL_BUILD_WITH_UCX
#include "transports/ucx/ucx_transport.h"
#endif
#if SCCL_BUILD_WITH_NCCL
#include "transports/nccl/nccl_transport.h"
#endif

namespace sccl {

const std::vector<TransportEntry>& transportRegistry() {
  static const std::vector<TransportEntry> entries = {
    {"local", "ranks are threads of one process, over shared memory", true, createLocalTransport},
#if SCCL_BUILD_WITH_MPI
    {"mpi", "MPI point-to-point and collectives (any MPI launch)", false, createMpiTransport},
#endif
#if SCCL_BUILD_WITH_UCX
    {"ucx", "UCX tagged messages and RMA (shared memory, TCP, RDMA; any launch)", false,
     createUcxTransport},
#endif
#if SCCL_BUILD_WITH_NCCL
    {"nccl", "NCCL collectives, one GPU per rank (device or staged host buffers)", false,
     createNcclTransport},
#endif
  };
  return entries;
}

const TransportEntry* findTransport(const std::string& name) {
  for (const TransportEntry& entry : transportRegistry()) {
    if (name == entry.name) return &entry;
  }
  return nullptr;
}

}  // namespace sccl
