#include "core/error.h"

#include <cstdarg>
#include <cstdio>

#include "core/log.h"

namespace sccl {
namespace {
thread_local std::string t_last_error;
}

scclResult_t fail(scclResult_t code, const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  t_last_error = text;
  SCCL_WARN(LogSubsys::All, "%s: %s", resultName(code), text);
  return code;
}

const std::string& threadLastError() {
  return t_last_error;
}
void clearThreadLastError() {
  t_last_error.clear();
}

const char* resultName(scclResult_t result) {
  switch (result) {
    case scclSuccess: return "no error";
    case scclUnhandledCudaError: return "unhandled cuda error";
    case scclSystemError: return "unhandled system error";
    case scclInternalError: return "internal error";
    case scclInvalidArgument: return "invalid argument";
    case scclInvalidUsage: return "invalid usage";
    case scclRemoteError: return "remote process exited or there was a network error";
    case scclInProgress: return "operation in progress";
    case scclTimeout: return "operation timed out";
    case scclNumResults: break;
  }
  return "unknown result code";
}

}  // namespace sccl
