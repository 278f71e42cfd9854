// Runs a test body on N ranks that are threads of this process, each with its own communicator
// over the in-process transport. Catch2 assertions are not thread-safe, so rank bodies record
// failures in a RankLog and the calling (main) thread asserts on the collected failures.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl_test {

class RankLog {
 public:
  explicit RankLog(int rank) : rank_(rank) {}
  // Records `what` as a failure when cond is false; returns cond.
  bool check(bool cond, const std::string& what) {
    if (!cond) failures_.push_back("rank " + std::to_string(rank_) + ": " + what);
    return cond;
  }
  bool checkResult(scclResult_t got, scclResult_t want, const std::string& what) {
    return check(got == want, what + " returned " + scclGetErrorString(got) + " (expected " +
                                  scclGetErrorString(want) + "): " + scclGetLastError(nullptr));
  }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  int rank_;
  std::vector<std::string> failures_;
};

using RankBody = std::function<void(int rank, scclComm_t comm, RankLog& log)>;

// Creates the communicators (transport "local" unless config says otherwise), runs body on every
// rank, destroys the communicators, and returns all ranks' failures (empty: success).
inline std::vector<std::string> runLocalRanks(int nranks, const RankBody& body,
                                              const scclConfig_t* config = nullptr) {
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) return {"scclGetUniqueId failed"};
  std::vector<RankLog> logs;
  for (int r = 0; r < nranks; ++r) logs.emplace_back(r);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      scclComm_t comm = nullptr;
      scclResult_t init = config ? scclCommInitRankConfig(&comm, nranks, id, r, config)
                                 : scclCommInitRank(&comm, nranks, id, r);
      if (!logs[r].checkResult(init, scclSuccess, "scclCommInitRank")) return;
      body(r, comm, logs[r]);
      logs[r].checkResult(scclCommDestroy(comm), scclSuccess, "scclCommDestroy");
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::string> failures;
  for (const RankLog& log : logs)
    failures.insert(failures.end(), log.failures().begin(), log.failures().end());
  return failures;
}

// Creates nranks communicators of one new job on threads (creation is collective) and returns
// them in rank order, for tests that drive the ranks themselves (abort, timeouts); empty if any
// creation failed (the others are then destroyed). The caller destroys or aborts each one.
inline std::vector<scclComm_t> initLocalComms(int nranks, const scclConfig_t* config = nullptr) {
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) return {};
  std::vector<scclComm_t> comms(static_cast<size_t>(nranks), nullptr);
  std::vector<scclResult_t> results(comms.size(), scclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      results[r] = config ? scclCommInitRankConfig(&comms[r], nranks, id, r, config)
                          : scclCommInitRank(&comms[r], nranks, id, r);
    });
  }
  for (auto& thread : threads) thread.join();
  for (scclResult_t result : results) {
    if (result == scclSuccess) continue;
    for (scclComm_t comm : comms)
      if (comm != nullptr) scclCommDestroy(comm);
    return {};
  }
  return comms;
}

// A value derived from (seed, rank, index): a small integer, so sums over up to 64 ranks are exact
// in every floating type including float16 (|sum| <= 64 * 15 < 2048).
inline int testValue(uint32_t seed, int rank, size_t index) {
  uint64_t h = (uint64_t(seed) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(rank) * 0xBF58476D1CE4E5B9ull) ^
               (uint64_t(index) * 0x94D049BB133111EBull);
  h ^= h >> 31;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return static_cast<int>(h % 31) - 15;  // -15 .. 15
}

}  // namespace sccl_test

// Checks that the failures list is empty, printing them when not.
#define REQUIRE_NO_RANK_FAILURES(failures)                                         \
  do {                                                                             \
    const auto& sccl_failures_ = (failures);                                       \
    for (const auto& sccl_failure_ : sccl_failures_) UNSCOPED_INFO(sccl_failure_); \
    REQUIRE(sccl_failures_.empty());                                               \
  } while (0)

// The same, continuing the test case (a loop over presets reports every one that fails).
#define CHECK_NO_RANK_FAILURES(failures)                                           \
  do {                                                                             \
    const auto& sccl_failures_ = (failures);                                       \
    for (const auto& sccl_failure_ : sccl_failures_) UNSCOPED_INFO(sccl_failure_); \
    CHECK(sccl_failures_.empty());                                                 \
  } while (0)
