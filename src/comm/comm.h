// The communicator: a rank's membership in a group, its transport, and its error state.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/transport.h"

namespace sccl {
struct NodeSplit;
}  // namespace sccl

struct scclComm {
  // Set while the handle is live; checked (with the live-handle registry) on every API entry.
  static constexpr uint64_t kMagic = 0x5343434c436f6d6dull;  // "SCCLComm"
  uint64_t magic = kMagic;

  int rank = 0;
  int nranks = 1;
  int64_t timeout_ms = 30000;
  std::string name;  // config commName, for logs

  std::unique_ptr<sccl::Bootstrap> bootstrap;  // kept for later set-up exchanges
  std::unique_ptr<sccl::Transport> transport;
  // Device buffers over a transport that carries host memory only: the pinned staging adapter
  // over `transport` (transports/staging/pinned_staging_transport.h), created at the first call
  // on device buffers (sccl::prepareDeviceTransport). Declared after `transport`, so it goes
  // first. Null while unused and when `transport` carries device memory itself (NCCL).
  std::unique_ptr<sccl::Transport> device_transport;

  // The most ranks of this communicator on one host (from the rank descriptions exchanged at
  // creation; the same on every rank): the cost model charges them for sharing its cores.
  int ranks_per_host = 1;

  // Which node each rank is on (comm_compatibility.h nodeOfEachRank: the host identity, or
  // SCCL_RANKS_PER_NODE), the same on every rank; what "hierarchy": "node" splits by.
  std::vector<int> node_of_rank;
  // The node split of this communicator once a "hierarchy": "node" sparsifier made it
  // (comm/node_split.h); shared with those sparsifiers, which may outlive the communicator.
  std::shared_ptr<sccl::NodeSplit> node_split;

  // The link as the first "auto" sparsifier's probe found it (tuning/link_probe.cc): later ones on
  // this communicator reuse it ("measured once per communicator"). The probe is collective and
  // its result agreed, so every rank sets the same values at the same creation.
  bool link_probed = false;
  double probed_latency_s = 0;       // alpha
  double probed_bytes_per_s = 0;     // beta
  int probed_ranks_per_machine = 1;  // tuning::LinkProbe::ranks_per_machine

  // The number of the next collective call, agreed by every rank (comm/call_agreement.h).
  uint64_t call_sequence = 0;

  // scclSuccess while healthy; the first error that broke the communicator otherwise.
  std::atomic<scclResult_t> async_error{scclSuccess};

  // Text of the last failed call on this communicator (for scclGetLastError).
  std::mutex last_error_mutex;
  std::string last_error;
};

namespace sccl {

// The settings a communicator made by scclCommSplit keeps from its parent where its own config
// leaves a field unset. They win over the environment (SCCL_TRANSPORT, SCCL_TIMEOUT_MS): a child
// runs like its parent whatever the environment says by the time it is split off.
struct InheritedSettings {
  // The parent's transport, which the child runs on unless every one of its ranks is a thread of
  // one process: then "local", which needs no engine (a child of one rank, or of threads).
  std::string transport;
  int64_t timeout_ms = 0;
  std::string name;
};

struct CommInitRequest {
  int nranks = 0;
  int rank = -1;
  const scclUniqueId* id = nullptr;
  const scclConfig_t* config = nullptr;  // may be null
  const void* mpi_comm = nullptr;        // MPI_Comm* when called from scclCommInitMpi
  const char* default_transport = "local";
  const InheritedSettings* inherited = nullptr;  // set by scclCommSplit only
};

// Validates the request, runs the bootstrap rendezvous, checks that every rank was built and
// configured compatibly, and creates the transport. On failure nothing is returned.
scclResult_t commCreate(const CommInitRequest& request, scclComm** out);

// The checks commCreate applies to request.config (header, transport name, timeout) and nothing
// else: no rendezvous, no engine. For callers that must learn a bad config before they commit
// other ranks to a creation (scclCommSplit).
scclResult_t checkCommConfig(const CommInitRequest& request);

// Destroys a communicator (abort first when `abort` is set, so peers are released).
void commDestroy(scclComm* comm, bool abort);

// scclCommInitMpi without the API checks: collective over *mpi_comm (MPI_COMM_WORLD if null).
// Implemented by the MPI transport; a build without MPI returns scclInvalidUsage.
scclResult_t commCreateFromMpi(const void* mpi_comm, const scclConfig_t* config, scclComm** out);

// Whether this process has initialised MPI and not yet finalised it (false in a build without
// MPI): one input of the default transport's choice (comm/default_transport.h).
bool mpiInitialisedInThisProcess();

// The transport that runs operations on device buffers: the staging adapter when there is one,
// else the communicator's own (valid after prepareDeviceTransport succeeded).
inline Transport& deviceTransportOf(scclComm* comm) {
  return comm->device_transport ? *comm->device_transport : *comm->transport;
}

// Records the result of a failed transport operation on the communicator: anything other than an
// invalid argument breaks it (see scclCommGetAsyncError).
scclResult_t commRecordFailure(scclComm* comm, scclResult_t result);

}  // namespace sccl
