// What every extern "C" entry point does around its body: no C++ exception crosses the ABI
// (each becomes a result code with its text kept), the thread's last error is reset at entry,
// and a failure's text is copied onto the communicator for scclGetLastError(comm).
#pragma once

#include <exception>
#include <mutex>
#include <new>

#include "comm/comm.h"
#include "core/error.h"
#include "core/handle_registry.h"

namespace sccl {

template <typename Body>
scclResult_t guardedCall(const char* function, scclComm* comm, Body&& body) noexcept {
  clearThreadLastError();
  scclResult_t result;
  try {
    result = body();
  } catch (const std::bad_alloc&) {
    result = fail(scclSystemError, "%s: out of memory", function);
  } catch (const std::exception& error) {
    result = fail(scclInternalError, "%s: unexpected exception: %s", function, error.what());
  } catch (...) {
    result = fail(scclInternalError, "%s: unexpected non-standard exception", function);
  }
  if (result != scclSuccess && comm != nullptr && isLiveHandle(comm, scclComm::kMagic)) {
    std::lock_guard<std::mutex> lock(comm->last_error_mutex);
    comm->last_error = threadLastError();
  }
  return result;
}

// Checks that `comm` is a communicator this library created and has not destroyed.
inline scclResult_t requireLiveComm(const scclComm* comm) {
  SCCL_REQUIRE_ARG(comm != nullptr, "communicator is NULL");
  SCCL_REQUIRE_ARG(isLiveHandle(comm, scclComm::kMagic),
                   "%p is not a live sparsecoll communicator (destroyed, or never created)",
                   static_cast<const void*>(comm));
  return scclSuccess;
}

// A communicator broken by an earlier failure refuses further collectives with that error.
inline scclResult_t requireHealthyComm(const scclComm* comm) {
  SCCL_CHECK(requireLiveComm(comm));
  scclResult_t broken = comm->async_error.load();
  if (broken != scclSuccess) {
    return fail(broken, "communicator failed earlier (%s); only scclCommAbort/Destroy are valid",
                resultName(broken));
  }
  return scclSuccess;
}

}  // namespace sccl
