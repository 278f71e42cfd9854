// The -T watchdog of every perf binary (nccl-tests' per-test timeout): when no measurement has
// started for -T seconds the process prints what was running and exits with code 124, so a
// collective that hangs, or a baseline that runs away, ends the job instead of stalling it.
// Communicating binaries also pass -T to the communicator as the deadline of every wait, which
// turns most hangs into a clean scclTimeout long before the watchdog fires.
#pragma once

#include <string>

namespace sccl_perf {

constexpr int kWatchdogExitCode = 124;  // the code timeout(1) uses

// Starts the watchdog thread (once per process); timeout_s <= 0 leaves it off.
void watchdogStart(int timeout_s);

// A measurement named `what` begins: the clock restarts. Safe from any thread (each in-process
// rank kicks for itself); a no-op when the watchdog is off.
void watchdogKick(const std::string& what);

}  // namespace sccl_perf
