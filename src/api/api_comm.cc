// Communicator lifecycle and queries.
#include "api/api_guard.h"
#include "comm/comm.h"
#include "comm/comm_split.h"
#include "comm/default_transport.h"
#include "transports/bootstrap/bootstrap.h"

namespace {

scclResult_t initRank(scclComm_t* comm, int nranks, const scclUniqueId& id, int rank,
                      const scclConfig_t* config) {
  SCCL_REQUIRE_ARG(comm != nullptr, "comm output pointer is NULL");
  sccl::CommInitRequest request;
  request.nranks = nranks;
  request.rank = rank;
  request.id = &id;
  request.config = config;
  request.default_transport = sccl::kAutoTransport;  // where the ranks are decides
  scclComm* created = nullptr;
  SCCL_CHECK(sccl::commCreate(request, &created));
  *comm = created;
  return scclSuccess;
}

}  // namespace

extern "C" {

SCCL_API scclResult_t scclGetUniqueId(scclUniqueId* uniqueId) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_REQUIRE_ARG(uniqueId != nullptr, "uniqueId pointer is NULL");
    return sccl::bootstrapCreateUniqueId(uniqueId);
  });
}

SCCL_API scclResult_t scclCommInitRank(scclComm_t* comm, int nranks, scclUniqueId commId,
                                       int rank) {
  return sccl::guardedCall(__func__, nullptr,
                           [&] { return initRank(comm, nranks, commId, rank, nullptr); });
}

SCCL_API scclResult_t scclCommInitRankConfig(scclComm_t* comm, int nranks, scclUniqueId commId,
                                             int rank, const scclConfig_t* config) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_REQUIRE_ARG(config != nullptr, "config is NULL (use scclCommInitRank for defaults)");
    return initRank(comm, nranks, commId, rank, config);
  });
}

SCCL_API scclResult_t scclCommInitMpi(scclComm_t* comm, const void* mpiComm,
                                      const scclConfig_t* config) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_REQUIRE_ARG(comm != nullptr, "comm output pointer is NULL");
    scclComm* created = nullptr;
    SCCL_CHECK(sccl::commCreateFromMpi(mpiComm, config, &created));
    *comm = created;
    return scclSuccess;
  });
}

// Only the parent is checked here: a rank with a bad color, newcomm or config must still join the
// split's exchange so that its peers fail with it instead of waiting (comm/comm_split.h).
SCCL_API scclResult_t scclCommSplit(scclComm_t comm, int color, int key, scclComm_t* newcomm,
                                    scclConfig_t* config) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    return sccl::commSplit(comm, color, key, newcomm, config);
  });
}

SCCL_API scclResult_t scclCommDestroy(scclComm_t comm) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_CHECK(sccl::requireLiveComm(comm));
    sccl::commDestroy(comm, /*abort=*/false);
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclCommAbort(scclComm_t comm) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_CHECK(sccl::requireLiveComm(comm));
    sccl::commDestroy(comm, /*abort=*/true);
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclCommGetAsyncError(scclComm_t comm, scclResult_t* asyncError) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireLiveComm(comm));
    SCCL_REQUIRE_ARG(asyncError != nullptr, "asyncError pointer is NULL");
    // A peer's failure is reported as soon as the transport knows it, not at the next call.
    // Its text becomes the communicator's last error (scclGetLastError(comm)).
    if (comm->async_error.load() == scclSuccess && comm->transport != nullptr &&
        sccl::commRecordFailure(comm, comm->transport->pollHealth()) != scclSuccess) {
      std::lock_guard<std::mutex> lock(comm->last_error_mutex);
      comm->last_error = sccl::threadLastError();
    }
    *asyncError = comm->async_error.load();
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclCommCount(const scclComm_t comm, int* count) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireLiveComm(comm));
    SCCL_REQUIRE_ARG(count != nullptr, "count pointer is NULL");
    *count = comm->nranks;
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclCommUserRank(const scclComm_t comm, int* rank) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireLiveComm(comm));
    SCCL_REQUIRE_ARG(rank != nullptr, "rank pointer is NULL");
    *rank = comm->rank;
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclCommTransportName(const scclComm_t comm, const char** name) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireLiveComm(comm));
    SCCL_REQUIRE_ARG(name != nullptr, "name pointer is NULL");
    *name = comm->transport->name();
    return scclSuccess;
  });
}

}  // extern "C"
