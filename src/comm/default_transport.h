// The transport of a communicator whose creator named none (no config transport, no
// SCCL_TRANSPORT: the name "auto"). NCCL's ncclCommInitRank works across processes with the unique
// id alone, and users port with exactly that call, so the choice follows where the ranks are:
//  - every rank a thread of one process: "local" (shared memory, no engine);
//  - otherwise "ucx" when the library was built with UCX (any launch: mpirun, torchrun, ssh);
//  - otherwise "mpi" when MPI is built and initialised in every rank's process, one rank per
//    process (the MPI transport maps ranks to MPI processes);
//  - otherwise scclInvalidUsage saying what is missing.
// The inputs are the rendezvous' rank descriptions, which every rank holds identically after the
// exchange (and which agree on the build), so every rank takes the same decision without another
// message.
#pragma once

#include <string>
#include <vector>

#include "comm/comm_compatibility.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

inline constexpr const char* kAutoTransport = "auto";

struct TransportChoice {
  std::string name;    // a registered transport
  std::string reason;  // one line for the log: why this one
};

scclResult_t chooseDefaultTransport(const std::vector<RankDescription>& ranks,
                                    TransportChoice* choice);

}  // namespace sccl
