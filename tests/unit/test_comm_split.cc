// scclCommSplit on the in-process transport: groups by color ranked by (key, parent rank) at 1-8
// ranks, NOCOLOR ranks, a split of a split, the settings a child inherits, refusals that every
// rank shares (another collective on one rank, a bad argument on one rank) with the parent usable
// afterwards, and children that outlive, or die before, their parents.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "support/local_ranks.h"

using sccl_test::initLocalComms;
using sccl_test::RankLog;
using sccl_test::runLocalRanks;
using sccl_test::testValue;

namespace {

using RankRule = std::function<int(int rank)>;

// A pointer no call may write: an output left untouched still holds it.
const scclComm_t kUntouched = reinterpret_cast<scclComm_t>(uintptr_t{0x5eed});

// The parent ranks of `rank`'s group in their new rank order: (key, parent rank).
std::vector<int> expectedMembers(int nranks, int rank, const RankRule& color, const RankRule& key) {
  std::vector<int> members;
  for (int r = 0; r < nranks; ++r) {
    if (color(r) == color(rank)) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return key(a) < key(b); });
  return members;
}

// The child's size, rank, transport and rank order (an all-gather of the parent ranks), and an
// all-reduce sum over exactly its members.
void checkChild(scclComm_t child, int parent_rank, const std::vector<int>& members, RankLog& log,
                const std::string& what) {
  int count = -1, me = -1;
  const char* transport = nullptr;
  log.checkResult(scclCommCount(child, &count), scclSuccess, what + ": count");
  log.checkResult(scclCommUserRank(child, &me), scclSuccess, what + ": rank");
  log.checkResult(scclCommTransportName(child, &transport), scclSuccess, what + ": transport");
  const int want_rank =
      static_cast<int>(std::find(members.begin(), members.end(), parent_rank) - members.begin());
  if (!log.check(count == int(members.size()) && me == want_rank,
                 what + ": rank " + std::to_string(me) + " of " + std::to_string(count) +
                     ", expected " + std::to_string(want_rank) + " of " +
                     std::to_string(members.size()))) {
    return;
  }
  log.check(transport != nullptr && std::string(transport) == "local", what + ": not local");
  std::vector<int32_t> order(members.size(), -1);
  const int32_t mine = parent_rank;
  log.checkResult(scclAllGather(&mine, order.data(), 1, scclInt32, child, nullptr), scclSuccess,
                  what + ": all-gather");
  log.check(std::equal(order.begin(), order.end(), members.begin()), what + ": rank order");
  std::vector<float> x(257), y(257, -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(testValue(17, parent_rank, i));
  log.checkResult(scclAllReduce(x.data(), y.data(), x.size(), scclFloat32, scclSum, child, nullptr),
                  scclSuccess, what + ": all-reduce");
  size_t wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float sum = 0;
    for (int r : members) sum += float(testValue(17, r, i));
    wrong += y[i] != sum;
  }
  log.check(wrong == 0, what + ": " + std::to_string(wrong) + " wrong sums");
}

// Splits `comm` by the rules, checks the child and destroys it.
void splitAndCheck(scclComm_t comm, int nranks, int rank, const RankRule& color,
                   const RankRule& key, RankLog& log, const std::string& what) {
  scclComm_t child = kUntouched;
  if (!log.checkResult(scclCommSplit(comm, color(rank), key(rank), &child, nullptr), scclSuccess,
                       what)) {
    return;
  }
  if (color(rank) == SCCL_SPLIT_NOCOLOR) {
    log.check(child == nullptr, what + ": a NOCOLOR rank got a communicator");
    return;
  }
  checkChild(child, rank, expectedMembers(nranks, rank, color, key), log, what);
  log.checkResult(scclCommDestroy(child), scclSuccess, what + ": destroy");
}

void checkStillWorks(scclComm_t comm, int nranks, RankLog& log, const std::string& after) {
  float one = 1.0f, sum = 0.0f;
  log.checkResult(scclAllReduce(&one, &sum, 1, scclFloat32, scclSum, comm, nullptr), scclSuccess,
                  "all-reduce after " + after);
  log.check(sum == float(nranks), "all-reduce after " + after + " gave " + std::to_string(sum));
}

// Runs body(rank, comm) on threads over communicators the caller made (and disposes of).
std::vector<std::string> runOnComms(const std::vector<scclComm_t>& comms,
                                    const std::function<void(int, scclComm_t, RankLog&)>& body) {
  std::vector<RankLog> logs;
  for (size_t r = 0; r < comms.size(); ++r) logs.emplace_back(int(r));
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] { body(int(r), comms[r], logs[r]); });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::string> failures;
  for (const RankLog& log : logs)
    failures.insert(failures.end(), log.failures().begin(), log.failures().end());
  return failures;
}

}  // namespace

TEST_CASE("comm split: even and odd ranks at 1-8 ranks", "[local][comm][comm_split]") {
  for (int nranks = 1; nranks <= 8; ++nranks) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        splitAndCheck(
            comm, nranks, rank, [](int r) { return r % 2; }, [](int r) { return r; }, log,
            "even/odd");
        checkStillWorks(comm, nranks, log, "the split");
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("comm split: one group, keys reversing the order, equal keys keeping the parent's",
          "[local][comm][comm_split]") {
  for (int nranks : {1, 2, 5, 8}) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        auto one = [](int) { return 3; };
        splitAndCheck(
            comm, nranks, rank, one, [](int) { return 0; }, log, "one group");
        splitAndCheck(
            comm, nranks, rank, one, [](int r) { return -r; }, log, "reversed keys");
        // Keys 1, 1, 0, 0, ...: pairs swap, each pair in parent order.
        splitAndCheck(
            comm, nranks, rank, one, [](int r) { return 1 - (r / 2) % 2; }, log, "equal keys");
        // Two groups of interleaved colors, each reversed.
        splitAndCheck(
            comm, nranks, rank, [](int r) { return r % 3 == 0 ? 9 : 4; },
            [](int r) { return 100 - r; }, log, "two groups reversed");
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("comm split: NOCOLOR ranks get NULL and take no part", "[local][comm][comm_split]") {
  for (int nranks = 1; nranks <= 8; ++nranks) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        auto key = [](int r) { return r; };
        splitAndCheck(
            comm, nranks, rank, [](int r) { return r % 3 == 1 ? SCCL_SPLIT_NOCOLOR : 0; }, key, log,
            "every third rank without a color");
        splitAndCheck(
            comm, nranks, rank, [](int) { return SCCL_SPLIT_NOCOLOR; }, key, log,
            "no rank with a color");
        checkStillWorks(comm, nranks, log, "the NOCOLOR splits");
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("comm split: a split of a split, used after both parents are gone",
          "[local][comm][comm_split]") {
  const int nranks = 8;
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclComm_t half = kUntouched, quarter = kUntouched;
    if (!log.checkResult(scclCommSplit(comm, rank % 2, rank, &half, nullptr), scclSuccess,
                         "first split")) {
      return;
    }
    int half_rank = -1;
    scclCommUserRank(half, &half_rank);
    // Within each half (parent ranks 0,2,4,6 or 1,3,5,7): first two and last two, reversed.
    if (!log.checkResult(scclCommSplit(half, half_rank / 2, -half_rank, &quarter, nullptr),
                         scclSuccess, "second split")) {
      scclCommDestroy(half);
      return;
    }
    log.checkResult(scclCommDestroy(half), scclSuccess, "destroy the half");
    const int base = rank % 2 + 4 * (half_rank / 2);  // the quarter's smallest parent rank
    checkChild(quarter, rank, {base + 2, base}, log, "quarter");
    log.checkResult(scclCommDestroy(quarter), scclSuccess, "destroy the quarter");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("comm split: the child keeps the parent's settings unless its config sets them",
          "[local][comm][comm_split]") {
  scclConfig_t parent_config = SCCL_CONFIG_INITIALIZER;
  parent_config.timeoutMs = 12345;
  parent_config.commName = "parent";
  auto failures = runLocalRanks(
      3,
      [&](int rank, scclComm_t comm, RankLog& log) {
        scclComm_t plain = kUntouched, configured = kUntouched;
        log.checkResult(scclCommSplit(comm, 0, rank, &plain, nullptr), scclSuccess, "plain");
        scclConfig_t config = SCCL_CONFIG_INITIALIZER;
        config.timeoutMs = 777;
        config.transport = "local";
        log.checkResult(scclCommSplit(comm, rank % 2, rank, &configured, &config), scclSuccess,
                        "configured");
        if (!log.failures().empty()) return;
        // Internal fields: the public API has no query for them.
        log.check(plain->timeout_ms == 12345 && plain->name == "parent",
                  "NULL config: timeout " + std::to_string(plain->timeout_ms) + ", name '" +
                      plain->name + "'");
        log.check(configured->timeout_ms == 777 && configured->name == "parent",
                  "config with a timeout: timeout " + std::to_string(configured->timeout_ms) +
                      ", name '" + configured->name + "'");
        scclCommDestroy(plain);
        scclCommDestroy(configured);
      },
      &parent_config);
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("comm split: a rank in another collective makes every rank refuse",
          "[local][comm][comm_split][errors]") {
  const int nranks = 4;
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclComm_t child = kUntouched;
    const scclResult_t got =
        rank == 2 ? scclBarrier(comm) : scclCommSplit(comm, rank % 2, rank, &child, nullptr);
    log.checkResult(got, scclInvalidUsage, rank == 2 ? "barrier against splits" : "split");
    const std::string message = scclGetLastError(comm);
    log.check(message.find("scclCommSplit") != std::string::npos &&
                  message.find("scclBarrier") != std::string::npos,
              "the message names both calls: " + message);
    log.check(child == kUntouched, "newcomm was written");
    scclResult_t async_error = scclInternalError;
    scclCommGetAsyncError(comm, &async_error);
    log.check(async_error == scclSuccess, "the refusal broke the parent");
    checkStillWorks(comm, nranks, log, "the refused split");
    splitAndCheck(
        comm, nranks, rank, [](int r) { return r % 2; }, [](int r) { return r; }, log,
        "a matched split afterwards");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("comm split: a bad argument on one rank fails every rank and creates nothing",
          "[local][comm][comm_split][errors]") {
  const int nranks = 3, bad = 1;
  struct BadCase {
    const char* name;
    scclResult_t want;  // on the bad rank
    const char* names;  // in the bad rank's message
    int color;
    bool null_newcomm;
    bool bad_config;
    const char* transport;  // of the bad config
  };
  const BadCase cases[] = {
      {"color -2", scclInvalidArgument, "color -2", -2, false, false, nullptr},
      {"color INT_MIN", scclInvalidArgument, "color", INT_MIN, false, false, nullptr},
      {"NULL newcomm", scclInvalidArgument, "newcomm", 0, true, false, nullptr},
      {"NULL newcomm and NOCOLOR", scclInvalidArgument, "newcomm", SCCL_SPLIT_NOCOLOR, true, false,
       nullptr},
      {"config timeout 0", scclInvalidArgument, "timeoutMs", 0, false, true, nullptr},
      {"config transport unknown", scclInvalidArgument, "carrier-pigeon", 0, false, true,
       "carrier-pigeon"},
  };
  for (const BadCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        scclConfig_t config = SCCL_CONFIG_INITIALIZER;
        if (c.bad_config && rank == bad) {
          if (c.transport != nullptr) {
            config.transport = c.transport;
          } else {
            config.timeoutMs = 0;
          }
        }
        scclComm_t child = kUntouched;
        const bool is_bad = rank == bad;
        const scclResult_t got = scclCommSplit(comm, is_bad ? c.color : 0, rank,
                                               is_bad && c.null_newcomm ? nullptr : &child,
                                               c.bad_config ? &config : nullptr);
        const std::string message = scclGetLastError(comm);
        log.checkResult(got, is_bad ? c.want : scclInvalidUsage, c.name);
        log.check(message.find(is_bad ? c.names : "rank 1") != std::string::npos,
                  std::string(c.name) + ": the message does not name it: " + message);
        log.check(child == kUntouched, std::string(c.name) + ": newcomm was written");
        checkStillWorks(comm, nranks, log, c.name);
        splitAndCheck(
            comm, nranks, rank, [](int) { return 0; }, [](int r) { return r; }, log,
            std::string("a valid split after ") + c.name);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("comm split: parent and child are destroyed or aborted in any order",
          "[local][comm][comm_split]") {
  const int nranks = 4;
  enum class Order {
    ParentDestroyedFirst,
    ParentAbortedFirst,
    ChildDestroyedFirst,
    ChildAbortedFirst
  };
  for (Order order : {Order::ParentDestroyedFirst, Order::ParentAbortedFirst,
                      Order::ChildDestroyedFirst, Order::ChildAbortedFirst}) {
    DYNAMIC_SECTION("order " << int(order)) {
      std::vector<scclComm_t> comms = initLocalComms(nranks);
      REQUIRE(comms.size() == size_t(nranks));
      auto failures = runOnComms(comms, [&](int rank, scclComm_t comm, RankLog& log) {
        scclComm_t child = kUntouched;
        if (!log.checkResult(scclCommSplit(comm, rank / 2, rank, &child, nullptr), scclSuccess,
                             "split")) {
          scclCommDestroy(comm);
          return;
        }
        const std::vector<int> members = rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
        const bool parent_first =
            order == Order::ParentDestroyedFirst || order == Order::ParentAbortedFirst;
        const bool abort_first =
            order == Order::ParentAbortedFirst || order == Order::ChildAbortedFirst;
        scclComm_t first = parent_first ? comm : child;
        scclComm_t second = parent_first ? child : comm;
        log.checkResult(abort_first ? scclCommAbort(first) : scclCommDestroy(first), scclSuccess,
                        "dispose of the first");
        // The survivor, alone now, still works: its own rendezvous and transport.
        scclResult_t async_error = scclInternalError;
        log.checkResult(scclCommGetAsyncError(second, &async_error), scclSuccess, "async error");
        log.check(async_error == scclSuccess, "the survivor is broken");
        if (parent_first) {
          checkChild(second, rank, members, log, "child after its parent");
        } else {
          checkStillWorks(second, nranks, log, "the child's end");
        }
        log.checkResult(scclCommDestroy(second), scclSuccess, "destroy the survivor");
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}
