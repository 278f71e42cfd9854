// scclCommInitMpi's work (sccl::commCreateFromMpi): a sparsecoll communicator with the ranks of an
// MPI communicator. Rank 0 creates the unique id and MPI broadcasts it, so the caller needs no
// out-of-band channel; then every rank joins through the ordinary commCreate, which hands the MPI
// communicator to the transport (the MPI transport duplicates it). Also whether MPI is
// initialised here, for the default transport's choice.
#include <mpi.h>

#include <cstddef>
#include <string>

#include "comm/comm.h"
#include "core/error.h"
#include "core/settings.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/mpi/mpi_support.h"

namespace sccl {
namespace {

// The deadline of the id broadcast: the config's timeoutMs where it has a valid one, else
// SCCL_TIMEOUT_MS (commCreate validates the config itself and reports a bad one).
int64_t idBroadcastTimeoutMs(const scclConfig_t* config) {
  bool has_timeout = config != nullptr && config->magic == SCCL_CONFIG_MAGIC &&
                     config->size >= offsetof(scclConfig_t, timeoutMs) + sizeof(int) &&
                     config->timeoutMs != SCCL_CONFIG_UNDEF_INT && config->timeoutMs > 0;
  int64_t timeout_ms = has_timeout ? config->timeoutMs : paramTimeoutMs();
  return timeout_ms > 0 ? timeout_ms : 30000;
}

// Rank 0's id with a flag saying whether rank 0 could make one, so that its failure stops every
// rank instead of leaving them to time out in the rendezvous.
struct IdMessage {
  int32_t valid;
  scclUniqueId id;
};

scclResult_t broadcastUniqueId(MPI_Comm comm, int rank, int64_t timeout_ms, scclUniqueId* id) {
  IdMessage message{};
  scclResult_t created = scclSuccess;
  std::string create_error;
  if (rank == 0) {
    created = bootstrapCreateUniqueId(&message.id);
    message.valid = created == scclSuccess ? 1 : 0;
    create_error = threadLastError();
  }
  MPI_Request request = MPI_REQUEST_NULL;
  SCCL_CHECK(mpi::checkMpi(
      MPI_Ibcast(&message, static_cast<int>(sizeof(message)), MPI_BYTE, 0, comm, &request),
      "scclCommInitMpi: MPI_Ibcast of the unique id"));
  mpi::WaitSpec spec{"MPI_Ibcast of the unique id", "scclCommInitMpi", timeout_ms};
  SCCL_CHECK(mpi::waitForRequests(&request, nullptr, 1, spec));
  if (created != scclSuccess) return fail(created, "%s", create_error.c_str());
  if (!message.valid) {
    return fail(scclRemoteError,
                "scclCommInitMpi: rank 0 could not create the unique id (see "
                "its log)");
  }
  *id = message.id;
  return scclSuccess;
}

}  // namespace

scclResult_t commCreateFromMpi(const void* mpi_comm, const scclConfig_t* config, scclComm** out) {
  SCCL_REQUIRE_ARG(out != nullptr, "scclCommInitMpi: comm output pointer is NULL");
  int thread_level = MPI_THREAD_SINGLE;
  SCCL_CHECK(mpi::requireMpiReady("scclCommInitMpi", &thread_level));
  // Kept alive for the whole creation: the transport gets its address.
  MPI_Comm comm = mpi_comm != nullptr ? *static_cast<const MPI_Comm*>(mpi_comm) : MPI_COMM_WORLD;
  SCCL_REQUIRE_ARG(comm != MPI_COMM_NULL, "scclCommInitMpi: *mpiComm is MPI_COMM_NULL");
  int is_inter = 0;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_test_inter(comm, &is_inter), "MPI_Comm_test_inter"));
  SCCL_REQUIRE_ARG(!is_inter, "scclCommInitMpi: an inter-communicator cannot be used");
  int rank = 0, size = 0;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank"));
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_size(comm, &size), "MPI_Comm_size"));
  scclUniqueId id{};
  SCCL_CHECK(broadcastUniqueId(comm, rank, idBroadcastTimeoutMs(config), &id));

  CommInitRequest request;
  request.nranks = size;
  request.rank = rank;
  request.id = &id;
  request.config = config;
  request.mpi_comm = &comm;
  request.default_transport = "mpi";
  return commCreate(request, out);
}

bool mpiInitialisedInThisProcess() {
  int initialized = 0, finalized = 0;
  // Both queries may be called before MPI_Init and after MPI_Finalize.
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

}  // namespace sccl
