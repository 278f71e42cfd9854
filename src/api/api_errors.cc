// Error strings and version.
#include <mutex>
#include <string>

#include "api/api_guard.h"
#include "core/error.h"

extern "C" {

SCCL_API const char* scclGetErrorString(scclResult_t result) {
  return sccl::resultName(result);
}

SCCL_API const char* scclGetLastError(scclComm_t comm) {
  if (comm != nullptr && sccl::isLiveHandle(comm, scclComm::kMagic)) {
    std::lock_guard<std::mutex> lock(comm->last_error_mutex);
    return comm->last_error.c_str();
  }
  return sccl::threadLastError().c_str();
}

SCCL_API scclResult_t scclGetVersion(int* version) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_REQUIRE_ARG(version != nullptr, "version pointer is NULL");
    *version = SCCL_VERSION_CODE;
    return scclSuccess;
  });
}

}  // extern "C"
