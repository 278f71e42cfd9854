#include "core/log.h"

#include <strings.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "core/settings.h"

namespace sccl {
namespace {

struct LogSink {
  std::mutex mutex;
  FILE* file = stderr;
  char host[64] = "";
};

LogSink& sink() {
  static LogSink instance;
  return instance;
}

LogLevel parseLevel(const std::string& text) {
  if (strcasecmp(text.c_str(), "VERSION") == 0) return LogLevel::Version;
  if (strcasecmp(text.c_str(), "WARN") == 0) return LogLevel::Warn;
  if (strcasecmp(text.c_str(), "INFO") == 0) return LogLevel::Info;
  if (strcasecmp(text.c_str(), "TRACE") == 0) return LogLevel::Trace;
  return LogLevel::None;
}

// Expands %h (host name) and %p (pid) in SCCL_DEBUG_FILE.
std::string expandLogFileName(const std::string& pattern, const char* host) {
  std::string name;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'h') {
        name += host;
        ++i;
        continue;
      }
      if (pattern[i + 1] == 'p') {
        name += std::to_string(getpid());
        ++i;
        continue;
      }
    }
    name += pattern[i];
  }
  return name;
}

const char* subsysName(LogSubsys subsys) {
  switch (subsys) {
    case LogSubsys::Init: return "INIT";
    case LogSubsys::Coll: return "COLL";
    case LogSubsys::Transport: return "TRANSPORT";
    case LogSubsys::Bootstrap: return "BOOTSTRAP";
    case LogSubsys::Kernel: return "KERNEL";
    case LogSubsys::All: return "ALL";
  }
  return "?";
}

LogState initLogState() {
  LogState state{parseLevel(paramDebug()), parseSubsysMask(paramDebugSubsys().c_str())};
  LogSink& out = sink();
  gethostname(out.host, sizeof(out.host) - 1);
  if (state.level != LogLevel::None && !paramDebugFile().empty()) {
    std::string name = expandLogFileName(paramDebugFile(), out.host);
    FILE* file = std::fopen(name.c_str(), "w");
    if (file != nullptr) {
      out.file = file;
    } else {
      std::fprintf(stderr, "sparsecoll: cannot open SCCL_DEBUG_FILE %s: %s; logging to stderr\n",
                   name.c_str(), std::strerror(errno));
    }
  }
  return state;
}

}  // namespace

uint32_t parseSubsysMask(const char* text) {
  bool invert = (text[0] == '^');
  if (invert) ++text;
  uint32_t mask = 0;
  std::string list(text);
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    for (LogSubsys subsys : {LogSubsys::Init, LogSubsys::Coll, LogSubsys::Transport,
                             LogSubsys::Bootstrap, LogSubsys::Kernel, LogSubsys::All}) {
      if (strcasecmp(item.c_str(), subsysName(subsys)) == 0) mask |= static_cast<uint32_t>(subsys);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return invert ? ~mask : mask;
}

const LogState& logState() {
  static const LogState state = initLogState();
  return state;
}

void logMessage(LogLevel level, LogSubsys subsys, const char* file, int line, const char* fmt,
                ...) {
  static const char* const level_names[] = {"NONE", "VERSION", "WARN", "INFO", "TRACE"};
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  const char* base = std::strrchr(file, '/');
  base = (base != nullptr) ? base + 1 : file;
  LogSink& out = sink();
  std::lock_guard<std::mutex> lock(out.mutex);
  std::fprintf(out.file, "%s:%d:%ld [sccl %s %s] %s:%d %s\n", out.host, static_cast<int>(getpid()),
               static_cast<long>(gettid()), level_names[static_cast<int>(level)],
               subsysName(subsys), base, line, text);
  std::fflush(out.file);
}

}  // namespace sccl
