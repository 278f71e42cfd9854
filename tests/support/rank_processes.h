// Multi-process tests launched without MPI: the parent makes a unique id (which starts the
// bootstrap's root service in the parent itself), starts N copies of its own binary as ranks
// 0..N-1 with the id, rank and size in environment variables <prefix>_ID, <prefix>_RANK and
// <prefix>_NRANKS, waits for them under a watchdog, and returns the worst of their exit codes.
// Used by the UCX suite (tests/ucx) and the GPU multi-process test (tests/gpu/multiprocess).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl_test {

inline std::string toHex(const void* data, size_t bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned char byte = static_cast<const unsigned char*>(data)[i];
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

inline bool fromHex(const char* text, void* data, size_t bytes) {
  if (text == nullptr || std::strlen(text) != 2 * bytes) return false;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned value = 0;
    if (std::sscanf(text + 2 * i, "%2x", &value) != 1) return false;
    static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(value);
  }
  return true;
}

// What a rank process reads from its environment (valid = false in the parent).
struct RankProcess {
  bool valid = false;
  scclUniqueId id{};
  int rank = -1;
  int nranks = 0;
};

inline RankProcess rankProcessFromEnvironment(const std::string& prefix) {
  RankProcess process;
  const char* rank = std::getenv((prefix + "_RANK").c_str());
  const char* nranks = std::getenv((prefix + "_NRANKS").c_str());
  if (rank == nullptr || nranks == nullptr) return process;
  process.rank = std::atoi(rank);
  process.nranks = std::atoi(nranks);
  process.valid = fromHex(std::getenv((prefix + "_ID").c_str()), &process.id, sizeof(process.id));
  return process;
}

// Starts the ranks (argv is passed to every one) and waits for them; a rank still running after
// watchdog_seconds is killed (exit code 124). With kill_rank >= 0 that rank is expected to die by
// SIGKILL (a peer-killed test): the parent accepts that and nothing else from it.
inline int launchRankProcesses(const std::string& prefix, int nranks, char** argv,
                               int watchdog_seconds, int kill_rank = -1) {
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) {
    std::fprintf(stderr, "launcher: scclGetUniqueId failed: %s\n", scclGetLastError(nullptr));
    return 1;
  }
  std::string hex = toHex(&id, sizeof(id));
  std::vector<pid_t> children;
  for (int r = 0; r < nranks; ++r) {
    // The environment is built before fork: the root service's thread runs in this process, so
    // the child may only call async-signal-safe functions before exec.
    std::vector<std::string> added = {prefix + "_ID=" + hex, prefix + "_RANK=" + std::to_string(r),
                                      prefix + "_NRANKS=" + std::to_string(nranks)};
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    for (std::string& entry : added) env.push_back(entry.data());
    env.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      execve("/proc/self/exe", argv, env.data());
      _exit(127);
    }
    children.push_back(pid);
  }
  int worst = 0;
  size_t remaining = children.size();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(watchdog_seconds);
  std::vector<bool> reaped(children.size(), false);
  while (remaining > 0) {
    for (size_t r = 0; r < children.size(); ++r) {
      if (reaped[r]) continue;
      int status = 0;
      if (waitpid(children[r], &status, WNOHANG) != children[r]) continue;
      reaped[r] = true;
      --remaining;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (static_cast<int>(r) == kill_rank) {
        code = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 1;
        if (code != 0) std::fprintf(stderr, "launcher: rank %zu was to be killed\n", r);
      }
      if (code != 0) std::fprintf(stderr, "launcher: rank %zu exited with %d\n", r, code);
      if (code > worst) worst = code;
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "launcher: ranks still running after %d s, killing them\n",
                   watchdog_seconds);
      for (size_t r = 0; r < children.size(); ++r)
        if (!reaped[r]) kill(children[r], SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
      worst = 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return worst;
}

}  // namespace sccl_test
