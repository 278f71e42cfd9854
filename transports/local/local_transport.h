// The in-process transport: the ranks of a communicator are threads of one process and exchange
// data by reading each other's posted buffers directly. It serves fast multi-rank tests and the
// simulation of many ranks (64 and more) on one machine, and obeys the same contract as the
// network transports (transports/transport.h), including the rank-order reduction, so results
// are bitwise the same as over MPI.
#pragma once

#include <memory>

#include "transports/transport_registry.h"

namespace sccl {

scclResult_t createLocalTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out);

}  // namespace sccl
