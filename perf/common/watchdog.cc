// One detached thread sleeps until the deadline; every kick moves the deadline. _exit skips
// destructors on purpose: other threads may be blocked inside the library at that moment.
#include "watchdog.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace sccl_perf {
namespace {

using Clock = std::chrono::steady_clock;

struct WatchdogState {
  std::mutex mutex;
  std::condition_variable kicked;
  bool running = false;
  std::chrono::seconds timeout{0};
  Clock::time_point deadline;
  std::string what = "start-up";
};

WatchdogState& state() {
  static WatchdogState* instance = new WatchdogState;  // never destroyed: the thread outlives main
  return *instance;
}

void watch() {
  WatchdogState& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    const Clock::time_point deadline = s.deadline;
    if (s.kicked.wait_until(lock, deadline) == std::cv_status::timeout && s.deadline == deadline) {
      std::fprintf(stderr,
                   "perf watchdog: no progress for %lld s (-T) while running: %s; exiting\n",
                   static_cast<long long>(s.timeout.count()), s.what.c_str());
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(kWatchdogExitCode);
    }
  }
}

}  // namespace

void watchdogStart(int timeout_s) {
  if (timeout_s <= 0) return;
  WatchdogState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.running) return;
  s.running = true;
  s.timeout = std::chrono::seconds(timeout_s);
  s.deadline = Clock::now() + s.timeout;
  std::thread(watch).detach();
}

void watchdogKick(const std::string& what) {
  WatchdogState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.running) return;
  s.deadline = Clock::now() + s.timeout;
  s.what = what;
  s.kicked.notify_all();
}

}  // namespace sccl_perf
