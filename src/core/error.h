// Internal error handling: every internal function returns scclResult_t and is called through
// SCCL_CHECK, which leaves a file:line trail in the TRACE log. A failure is described once, where
// it is first known, with scclFail(); the text is kept per thread and copied onto the
// communicator by the API layer so that scclGetLastError() can return it.
#pragma once

#include <string>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Records `message` as this thread's last error, logs it at WARN (subsystem ALL) and returns code.
scclResult_t fail(scclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// This thread's last error text ("" if none).
const std::string& threadLastError();
void clearThreadLastError();

const char* resultName(scclResult_t result);

}  // namespace sccl

#define SCCL_CHECK(call)                                                    \
  do {                                                                      \
    scclResult_t sccl_check_result_ = (call);                               \
    if (sccl_check_result_ != scclSuccess) {                                \
      SCCL_TRACE(::sccl::LogSubsys::All, "%s:%d -> %s", __FILE__, __LINE__, \
                 ::sccl::resultName(sccl_check_result_));                   \
      return sccl_check_result_;                                            \
    }                                                                       \
  } while (0)

// Argument validation: fails with scclInvalidArgument and the formatted message when cond is
// false. Used before any side effect so that a rejected call changes nothing.
#define SCCL_REQUIRE_ARG(cond, ...)                                     \
  do {                                                                  \
    if (!(cond)) return ::sccl::fail(scclInvalidArgument, __VA_ARGS__); \
  } while (0)

#include "core/log.h"
