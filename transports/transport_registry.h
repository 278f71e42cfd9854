// The one registry of transports: name, description, and how to create one for a rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace sccl {

class Bootstrap;

// What a transport gets when a communicator is created.
struct TransportSetup {
  int rank = 0;
  int nranks = 1;
  int64_t timeout_ms = 30000;
  Bootstrap* bootstrap = nullptr;  // connected; valid during creation and for the comm's lifetime
  const void* mpi_comm = nullptr;  // MPI_Comm* given to scclCommInitMpi, else null
  std::string comm_name;           // for logs
};

struct TransportEntry {
  const char* name;
  const char* description;
  bool single_process;  // all ranks must be threads of one process
  scclResult_t (*create)(const TransportSetup& setup, std::unique_ptr<Transport>* out);
};

// The transports this build contains, in registry order.
const std::vector<TransportEntry>& transportRegistry();
// nullptr when no transport of that name was built.
const TransportEntry* findTransport(const std::string& name);

}  // namespace sccl
