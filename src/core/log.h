// Logging in the NCCL manner: SCCL_DEBUG sets the level, SCCL_DEBUG_SUBSYS the subsystems and
// SCCL_DEBUG_FILE the destination. The level and subsystem are tested before any formatting, so
// a disabled log line costs one comparison.
#pragma once

#include <cstdint>

namespace sccl {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

enum class LogSubsys : uint32_t {
  Init = 1u << 0,
  Coll = 1u << 1,
  Transport = 1u << 2,
  Bootstrap = 1u << 3,
  Kernel = 1u << 4,
  All = ~0u,
};

struct LogState {
  LogLevel level;
  uint32_t subsys_mask;
};

// The effective settings (read from the environment on first use).
const LogState& logState();

inline bool logEnabled(LogLevel level, LogSubsys subsys) {
  const LogState& state = logState();
  return static_cast<int>(level) <= static_cast<int>(state.level) &&
         (state.subsys_mask & static_cast<uint32_t>(subsys)) != 0;
}

void logMessage(LogLevel level, LogSubsys subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Parses "INIT,COLL" or "^KERNEL" into a mask; exposed for tests.
uint32_t parseSubsysMask(const char* text);

}  // namespace sccl

#define SCCL_LOG_AT(level, subsys, ...)                                   \
  do {                                                                    \
    if (::sccl::logEnabled(level, subsys))                                \
      ::sccl::logMessage(level, subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#define SCCL_WARN(subsys, ...) SCCL_LOG_AT(::sccl::LogLevel::Warn, subsys, __VA_ARGS__)
#define SCCL_INFO(subsys, ...) SCCL_LOG_AT(::sccl::LogLevel::Info, subsys, __VA_ARGS__)
#define SCCL_TRACE(subsys, ...) SCCL_LOG_AT(::sccl::LogLevel::Trace, subsys, __VA_ARGS__)
