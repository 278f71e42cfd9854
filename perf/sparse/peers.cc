#include "sparse/peers.h"

#include <string>

#include "sparse/bench.h"

#ifdef SCCL_PERF_WITH_MPI
#include <mpi.h>
#endif

namespace sccl_perf {

bool peerAvailable(const std::string& name) {
#ifdef SCCL_PERF_WITH_MPI
  return name == "mpi_allreduce";
#else
  (void)name;
  return false;
#endif
}

void runPeer(const std::string& name, const void* send, void* recv, size_t count,
             scclDataType_t dtype, scclRedOp_t op) {
#ifdef SCCL_PERF_WITH_MPI
  if (name != "mpi_allreduce") throw RankError("unknown peer " + name);
  MPI_Datatype type = dtype == scclFloat64 ? MPI_DOUBLE : MPI_FLOAT;
  if (dtype != scclFloat32 && dtype != scclFloat64)
    throw RankError("mpi_allreduce: float32 and float64 only");
  if (count > size_t(1) << 30) throw RankError("mpi_allreduce: count above 2^30");
  int rc = MPI_Allreduce(send, recv, int(count), type, MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) throw RankError("MPI_Allreduce failed");
  if (op == scclAvg) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (dtype == scclFloat64) {
      double* values = static_cast<double*>(recv);
      for (size_t i = 0; i < count; ++i) values[i] /= size;
    } else {
      float* values = static_cast<float*>(recv);
      for (size_t i = 0; i < count; ++i) values[i] /= float(size);
    }
  }
#else
  (void)send;
  (void)recv;
  (void)count;
  (void)dtype;
  (void)op;
  throw RankError("peer " + name + " needs the MPI build");
#endif
}

}  // namespace sccl_perf
