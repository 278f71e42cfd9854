// Shared helpers of the multi-process tests (run under mpiexec -n 1..4): the world's shape, an
// MPI transport over a duplicate of MPI_COMM_WORLD, and (from support/collective_reference.h)
// inputs derived from (seed, rank, index) with an independent reference reduction, so that every
// rank computes the exact expected result of a collective on its own and compares it bitwise.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "support/collective_reference.h"
#include "transports/mpi/mpi_transport.h"

namespace sccl_mpi_test {

inline int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int worldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// An MPI transport over a duplicate of MPI_COMM_WORLD (null on failure; the caller REQUIREs it).
inline std::unique_ptr<sccl::Transport> makeWorldTransport(
    int64_t timeout_ms = 60000, size_t max_message_bytes = sccl::mpi::kDefaultMaxMessageBytes) {
  MPI_Comm world = MPI_COMM_WORLD;
  sccl::TransportSetup setup;
  setup.rank = worldRank();
  setup.nranks = worldSize();
  setup.timeout_ms = timeout_ms;
  setup.mpi_comm = &world;
  setup.comm_name = "test";
  sccl::MpiTransportOptions options;
  options.max_message_bytes = max_message_bytes;
  std::unique_ptr<sccl::Transport> transport;
  if (sccl::createMpiTransportWithOptions(setup, options, &transport) != scclSuccess) return {};
  return transport;
}

// The inputs and the reference reduction (support/collective_reference.h).
using namespace sccl_test;

}  // namespace sccl_mpi_test
