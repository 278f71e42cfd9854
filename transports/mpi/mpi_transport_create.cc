// Creating the MPI transport's private communicator, in one of two ways:
//  - from scclCommInitMpi: a non-blocking duplicate (MPI_Comm_idup) of the caller's communicator,
//    after which the ranks agree (one tiny MPI_Iallreduce) that MPI's rank and size are the
//    communicator's, so that a mismatch on one rank fails every rank instead of hanging them;
//  - from scclCommInitRank: the ranks exchange their MPI_COMM_WORLD rank and job identity through
//    the bootstrap, check them, and build a communicator over exactly those processes, in
//    sparsecoll rank order, with MPI_Comm_create_group (collective over the group only).
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/mpi/mpi_transport.h"
#include "transports/mpi/mpi_transport_create.h"

namespace sccl {
namespace {

// What each rank tells the others through the bootstrap. Fixed-size fields only.
struct ProcessIdentity {
  int32_t mpi_ready;   // 1 when this rank can call MPI; 0 makes every rank fail
  int32_t world_rank;  // in MPI_COMM_WORLD
  int32_t world_size;
  int32_t reserved;
  uint64_t job_hash;  // of the launcher's job name (PMIX_NAMESPACE); 0 when there is none
};

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= static_cast<const uint8_t*>(data)[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

// Open MPI (and other PMIx launchers) name each job; processes of different jobs can have the
// same world rank, which the checks below would otherwise miss.
uint64_t launcherJobHash() {
  const char* name = std::getenv("PMIX_NAMESPACE");
  return name != nullptr ? fnv1a(name, std::strlen(name)) : 0;
}

scclResult_t checkIdentities(const std::vector<ProcessIdentity>& all, int my_rank) {
  const ProcessIdentity& mine = all[my_rank];
  std::vector<int> sccl_rank_of_world(static_cast<size_t>(mine.world_size), -1);
  for (size_t r = 0; r < all.size(); ++r) {
    const ProcessIdentity& peer = all[r];
    if (!peer.mpi_ready) {
      return fail(scclInvalidUsage, "MPI transport: rank %zu cannot use MPI (see its log)", r);
    }
    if (peer.world_size != mine.world_size || peer.job_hash != mine.job_hash) {
      return fail(scclInvalidUsage,
                  "MPI transport: rank %zu belongs to another MPI job (world size %d vs %d); all "
                  "ranks must be processes of one mpirun",
                  r, peer.world_size, mine.world_size);
    }
    if (peer.world_rank < 0 || peer.world_rank >= mine.world_size) {
      return fail(scclInvalidUsage, "MPI transport: rank %zu reports world rank %d of %d", r,
                  peer.world_rank, mine.world_size);
    }
    int& owner = sccl_rank_of_world[static_cast<size_t>(peer.world_rank)];
    if (owner >= 0) {
      return fail(scclInvalidUsage,
                  "MPI transport: ranks %d and %zu are the same MPI process (world rank %d); "
                  "each sparsecoll rank needs its own process",
                  owner, r, peer.world_rank);
    }
    owner = static_cast<int>(r);
  }
  return scclSuccess;
}

// The group's creation tag, from the job token, so that concurrent creations over overlapping
// groups do not match each other's messages.
scclResult_t groupCreationTag(const Bootstrap& bootstrap, int* tag) {
  int* tag_upper_bound = nullptr;
  int found = 0;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_upper_bound, &found),
                           "MPI_Comm_get_attr(MPI_TAG_UB)"));
  uint64_t limit = static_cast<uint64_t>(found ? *tag_upper_bound : 32767) + 1;
  *tag = static_cast<int>(fnv1a(bootstrap.jobToken().data(), bootstrap.jobToken().size()) % limit);
  return scclSuccess;
}

scclResult_t describeThisProcess(int* thread_level, ProcessIdentity* identity) {
  SCCL_CHECK(mpi::requireMpiReady("MPI transport", thread_level));
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_rank(MPI_COMM_WORLD, &identity->world_rank), "MPI_Comm_rank"));
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_size(MPI_COMM_WORLD, &identity->world_size), "MPI_Comm_size"));
  identity->job_hash = launcherJobHash();
  identity->mpi_ready = 1;
  return scclSuccess;
}

scclResult_t buildCommFromBootstrap(const TransportSetup& setup, int* thread_level, MPI_Comm* out) {
  if (setup.bootstrap == nullptr) {
    return fail(scclInternalError, "MPI transport: created without mpi_comm and without bootstrap");
  }
  // Every rank takes part in the exchange even when it cannot use MPI, so that the others learn
  // it and fail too instead of waiting in MPI for it.
  ProcessIdentity mine{};
  scclResult_t ready = describeThisProcess(thread_level, &mine);
  std::string local_error = threadLastError();
  std::vector<ProcessIdentity> all(static_cast<size_t>(setup.nranks));
  SCCL_CHECK(setup.bootstrap->allGather(&mine, all.data(), sizeof(mine)));
  if (ready != scclSuccess) return fail(ready, "%s", local_error.c_str());
  SCCL_CHECK(checkIdentities(all, setup.rank));

  std::vector<int> world_ranks(all.size());
  for (size_t r = 0; r < all.size(); ++r) world_ranks[r] = all[r].world_rank;
  int tag = 0;
  SCCL_CHECK(groupCreationTag(*setup.bootstrap, &tag));
  MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group"));
  int rc = MPI_Group_incl(world_group, setup.nranks, world_ranks.data(), &group);
  MPI_Group_free(&world_group);
  SCCL_CHECK(mpi::checkMpi(rc, "MPI_Group_incl"));
  // The one blocking MPI call of the transport (MPI 3.1 has no non-blocking variant). The
  // bootstrap exchange just proved that every member is alive and calling it.
  MPI_Comm comm = MPI_COMM_NULL;
  rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &comm);
  MPI_Group_free(&group);
  SCCL_CHECK(mpi::checkMpi(rc, "MPI_Comm_create_group"));
  scclResult_t result =
      mpi::checkMpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (result != scclSuccess) {
    MPI_Comm_free(&comm);
    return result;
  }
  *out = comm;
  return scclSuccess;
}

// After the duplicate exists on every rank: all ranks learn whether any rank's MPI rank or size
// differs from its sparsecoll rank or size.
scclResult_t agreeOnRanks(MPI_Comm comm, const TransportSetup& setup) {
  int mpi_rank = 0, mpi_size = 0;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_rank(comm, &mpi_rank), "MPI_Comm_rank"));
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_size(comm, &mpi_size), "MPI_Comm_size"));
  struct {
    int ok;
    int rank;
  } mine{mpi_rank == setup.rank && mpi_size == setup.nranks ? 1 : 0, mpi_rank}, worst{};
  MPI_Request request = MPI_REQUEST_NULL;
  SCCL_CHECK(mpi::checkMpi(MPI_Iallreduce(&mine, &worst, 1, MPI_2INT, MPI_MINLOC, comm, &request),
                           "MPI_Iallreduce (rank check)"));
  mpi::WaitSpec spec{"MPI_Iallreduce (rank check)", "MPI transport creation", setup.timeout_ms};
  SCCL_CHECK(mpi::waitForRequests(&request, nullptr, 1, spec));
  if (!mine.ok) {
    return fail(scclInvalidUsage,
                "MPI transport: the MPI communicator has rank %d of %d but the sparsecoll "
                "communicator is rank %d of %d",
                mpi_rank, mpi_size, setup.rank, setup.nranks);
  }
  if (!worst.ok) {
    return fail(scclInvalidUsage,
                "MPI transport: MPI rank %d has a different sparsecoll rank or "
                "size than its MPI rank and size (see its log)",
                worst.rank);
  }
  return scclSuccess;
}

scclResult_t duplicateGivenComm(const TransportSetup& setup, int* thread_level, MPI_Comm* out) {
  SCCL_CHECK(mpi::requireMpiReady("MPI transport", thread_level));
  MPI_Comm parent = *static_cast<const MPI_Comm*>(setup.mpi_comm);
  SCCL_REQUIRE_ARG(parent != MPI_COMM_NULL, "MPI transport: the MPI communicator is MPI_COMM_NULL");
  int is_inter = 0;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_test_inter(parent, &is_inter), "MPI_Comm_test_inter"));
  SCCL_REQUIRE_ARG(!is_inter, "MPI transport: an inter-communicator cannot be used");
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  SCCL_CHECK(mpi::checkMpi(MPI_Comm_idup(parent, &dup, &request), "MPI_Comm_idup"));
  mpi::WaitSpec spec{"MPI_Comm_idup", "MPI transport creation", setup.timeout_ms};
  SCCL_CHECK(mpi::waitForRequests(&request, nullptr, 1, spec));
  scclResult_t result =
      mpi::checkMpi(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (result == scclSuccess) result = agreeOnRanks(dup, setup);
  if (result != scclSuccess) {
    MPI_Comm_free(&dup);
    return result;
  }
  *out = dup;
  return scclSuccess;
}

}  // namespace

scclResult_t createMpiTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out) {
  return createMpiTransportWithOptions(setup, MpiTransportOptions{}, out);
}

scclResult_t createMpiTransportWithOptions(const TransportSetup& setup,
                                           const MpiTransportOptions& options,
                                           std::unique_ptr<Transport>* out) {
  SCCL_REQUIRE_ARG(out != nullptr, "MPI transport: output pointer is NULL");
  SCCL_REQUIRE_ARG(setup.nranks >= 1 && setup.rank >= 0 && setup.rank < setup.nranks,
                   "MPI transport: rank %d out of range [0, %d)", setup.rank, setup.nranks);
  SCCL_REQUIRE_ARG(setup.timeout_ms > 0, "MPI transport: timeout %lld ms must be > 0",
                   static_cast<long long>(setup.timeout_ms));
  SCCL_REQUIRE_ARG(options.max_message_bytes >= 1 &&
                       options.max_message_bytes <= mpi::kLargestAllowedMessageBytes,
                   "MPI transport: max message bytes %zu out of range [1, INT_MAX]",
                   options.max_message_bytes);
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Comm comm = MPI_COMM_NULL;
  if (setup.mpi_comm != nullptr) {
    SCCL_CHECK(duplicateGivenComm(setup, &thread_level, &comm));
  } else {
    SCCL_CHECK(buildCommFromBootstrap(setup, &thread_level, &comm));
  }
  return MpiTransport::create(comm, setup, thread_level, options, out);
}

}  // namespace sccl
