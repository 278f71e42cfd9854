// Peers measured in the same run as sparsecoll: other libraries' collectives on the same
// buffers, links and clock. Today "mpi_allreduce": MPI_Allreduce (sum) of the whole dense
// gradient over MPI_COMM_WORLD, the dense baseline users compare with; only under mpirun.
#pragma once

#include <cstddef>
#include <string>

#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {

inline bool isPeer(const std::string& name) {
  return name == "mpi_allreduce";
}

// True when this build can run the peer (MPI transport compiled in).
bool peerAvailable(const std::string& name);

// One call of the peer: recv = sum over ranks of send (count elements of dtype). Throws
// RankError on failure. float16 and bfloat16 have no MPI type: the caller rejects them.
void runPeer(const std::string& name, const void* send, void* recv, size_t count,
             scclDataType_t dtype, scclRedOp_t op);

}  // namespace sccl_perf
