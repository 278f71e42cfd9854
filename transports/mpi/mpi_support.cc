// MPI result mapping, readiness checks and the deadline-bounded wait of the MPI transport.
#include "transports/mpi/mpi_support.h"

#include <mpi-ext.h>
#include <sched.h>

#include <chrono>

#include "core/error.h"
#include "core/patient_wait.h"

namespace sccl::mpi {
namespace {

scclResult_t resultForErrorClass(int error_class) {
  if (error_class == MPI_ERR_TRUNCATE) return scclInvalidUsage;
#if defined(MPIX_ERR_PROC_FAILED)
  if (error_class == MPIX_ERR_PROC_FAILED) return scclRemoteError;
#endif
#if defined(MPIX_ERR_REVOKED)
  if (error_class == MPIX_ERR_REVOKED) return scclRemoteError;
#endif
  return scclSystemError;
}

// MPI_Testall reports MPI_ERR_IN_STATUS; the cause is in the status of the request that failed.
int firstErrorInStatuses(int mpi_result, const MPI_Status* statuses, int count) {
  if (mpi_result != MPI_ERR_IN_STATUS || statuses == nullptr) return mpi_result;
  for (int i = 0; i < count; ++i) {
    int error = statuses[i].MPI_ERROR;
    if (error != MPI_SUCCESS && error != MPI_ERR_PENDING) return error;
  }
  return mpi_result;
}

}  // namespace

scclResult_t checkMpi(int mpi_result, const char* what) {
  if (mpi_result == MPI_SUCCESS) return scclSuccess;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(mpi_result, text, &length) != MPI_SUCCESS) text[0] = '\0';
  int error_class = MPI_ERR_UNKNOWN;
  if (MPI_Error_class(mpi_result, &error_class) != MPI_SUCCESS) error_class = MPI_ERR_UNKNOWN;
  scclResult_t result = resultForErrorClass(error_class);
  if (result == scclInvalidUsage) {
    return fail(result,
                "%s failed: %s (a message was longer than its receive buffer: the ranks "
                "passed different sizes)",
                what, text);
  }
  return fail(result, "%s failed: %s (MPI error class %d)", what, text, error_class);
}

scclResult_t requireMpiReady(const char* who, int* thread_level) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized) {
    return fail(scclInvalidUsage, "%s: MPI is not initialised; call MPI_Init_thread first", who);
  }
  if (finalized) return fail(scclInvalidUsage, "%s: MPI has already been finalised", who);
  int provided = MPI_THREAD_SINGLE;
  SCCL_CHECK(checkMpi(MPI_Query_thread(&provided), "MPI_Query_thread"));
  if (provided < MPI_THREAD_SERIALIZED) {
    int is_main = 0;
    SCCL_CHECK(checkMpi(MPI_Is_thread_main(&is_main), "MPI_Is_thread_main"));
    if (!is_main) {
      return fail(scclInvalidUsage,
                  "%s: MPI provides only %s, so only the thread that initialised MPI may call "
                  "it; call from that thread or initialise MPI with MPI_THREAD_SERIALIZED or "
                  "MPI_THREAD_MULTIPLE",
                  who, threadLevelName(provided));
    }
  }
  *thread_level = provided;
  return scclSuccess;
}

const char* threadLevelName(int thread_level) {
  switch (thread_level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown MPI thread level";
  }
}

scclResult_t waitForRequests(MPI_Request* requests, MPI_Status* statuses, int count,
                             const WaitSpec& spec) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::milliseconds(spec.timeout_ms);
  for (;;) {
    int done = 0;
    int rc =
        MPI_Testall(count, requests, &done, statuses != nullptr ? statuses : MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      return checkMpi(firstErrorInStatuses(rc, statuses, count), spec.operation);
    }
    if (done) return scclSuccess;
    if (spec.interrupt != nullptr) SCCL_CHECK((*spec.interrupt)());
    if (Clock::now() >= deadline) {
      return fail(scclTimeout,
                  "%s: %s did not complete within %lld ms (SCCL_TIMEOUT_MS or config timeoutMs); "
                  "a peer is missing, slow or stuck. MPI cannot cancel the operation, so this "
                  "communicator is unusable from now on",
                  spec.context, spec.operation, static_cast<long long>(spec.timeout_ms));
    }
    // Busy polling without yielding starves the peers (and the kernel's network processing)
    // when ranks share cores; see docs/transports/mpi.md. In a wait known to be long, a sleep
    // (core/patient_wait.h).
    pauseBetweenPolls(start);
  }
}

}  // namespace sccl::mpi
