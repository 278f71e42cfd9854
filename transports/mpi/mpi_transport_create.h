// Entry point of the MPI transport for the registry (transports/transport_registry.cc).
#pragma once

#include <memory>

#include "transports/transport_registry.h"

namespace sccl {
// With setup.mpi_comm: a transport over a duplicate of *(MPI_Comm*)setup.mpi_comm, whose rank and
// size must equal setup.rank / setup.nranks. Without: the ranks exchange their MPI_COMM_WORLD
// ranks through setup.bootstrap and build a communicator over exactly those processes with
// MPI_Comm_create_group (collective only over the group). MPI must be initialised.
scclResult_t createMpiTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out);
}  // namespace sccl
