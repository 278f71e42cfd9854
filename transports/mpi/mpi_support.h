// What every part of the MPI transport needs from MPI: result codes mapped to scclResult_t with
// MPI's own text, a check that MPI can be called from here, and the one way this transport
// waits: MPI_Testall plus sched_yield under a deadline, never a blocking MPI call that could hang.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>

#include "sparsecoll/sparsecoll.h"

namespace sccl::mpi {

// scclSuccess for MPI_SUCCESS. Otherwise records "<what> failed: <MPI_Error_string>" and returns
// scclInvalidUsage for truncation (the ranks disagreed on a size), scclRemoteError for a failed
// peer (only MPIs with ULFM report that) and scclSystemError for everything else.
scclResult_t checkMpi(int mpi_result, const char* what);

// scclInvalidUsage unless MPI is initialised, not finalised, and may be called from this thread
// (with MPI_THREAD_SINGLE or FUNNELED only the thread that initialised MPI may call it).
// `who` names the caller in the message. *thread_level receives the level MPI provides.
scclResult_t requireMpiReady(const char* who, int* thread_level);

const char* threadLevelName(int thread_level);

// Called on every polling round of a wait; a result other than scclSuccess ends the wait with it
// (used for abort requests and failure notices from peers).
using WaitInterrupt = std::function<scclResult_t()>;

struct WaitSpec {
  const char* operation = "";                // named in the timeout message, e.g. "allReduce"
  const char* context = "";                  // who waits, e.g. "MPI transport 'grads' rank 1 of 4"
  int64_t timeout_ms = 0;                    // > 0
  const WaitInterrupt* interrupt = nullptr;  // may be null
};

// Polls until all `count` requests complete. statuses (count entries, or null) receive their
// statuses. Returns scclTimeout once spec.timeout_ms has passed; the requests are then still
// active (Open MPI 4.1 cannot cancel a started collective) and the caller must treat the
// communicator as unusable.
scclResult_t waitForRequests(MPI_Request* requests, MPI_Status* statuses, int count,
                             const WaitSpec& spec);

}  // namespace sccl::mpi
