// Hostile inputs of the caller (docs/reliability.md, "Hostile-input round"): each case
// is one finding of an independent bad-input corpus. Every refusal must be a documented code with
// a message in scclGetLastError, and a communicator must stay usable after an invalid argument
// (checked by a correct all-reduce on it afterwards).
#include <catch2/catch.hpp>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/local_ranks.h"
#include "support/rank_processes.h"
#include "support/sparse_runs.h"

namespace {

using sccl_test::RankLog;

std::string lastError(scclComm_t comm) {
  const char* text = scclGetLastError(comm);
  return text != nullptr ? text : "";
}

// A 2-element all-reduce with a known sum: the communicator still works.
bool allReduceWorks(int rank, int nranks, scclComm_t comm, RankLog& log) {
  float in[2] = {float(rank + 1), 2.0f};
  float out[2] = {0, 0};
  if (!log.checkResult(scclAllReduce(in, out, 2, scclFloat32, scclSum, comm, nullptr), scclSuccess,
                       "all-reduce after the refused calls"))
    return false;
  return log.check(out[0] == float(nranks * (nranks + 1) / 2) && out[1] == 2.0f * float(nranks),
                   "all-reduce after the refused calls: wrong sum");
}

// The call returned scclInvalidArgument with a message naming `needle`.
void expectInvalid(RankLog& log, scclResult_t got, scclComm_t comm, const std::string& what,
                   const std::string& needle) {
  if (!log.checkResult(got, scclInvalidArgument, what)) return;
  const std::string message = lastError(comm);
  log.check(message.find(needle) != std::string::npos,
            what + ": message '" + message + "' does not mention '" + needle + "'");
}

int countEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* entry = readdir(d)) n += entry->d_name[0] != '.' ? 1 : 0;
  closedir(d);
  return n;
}

}  // namespace

// Finding 1.
TEST_CASE(
    "hostile input: config structs with a size or version outside the released range are refused",
    "[hostile]") {
  struct Header {
    const char* name;
    size_t size;       // 0: keep
    unsigned version;  // 0 with keep_version: keep
    bool keep_version;
  };
  const std::vector<Header> bad = {
      {"size SIZE_MAX", SIZE_MAX, 0, true},
      {"size of a newer struct", 0, SCCL_VERSION_CODE + 1, false},
      {"version 0", 0, 0, false},
      {"version UINT_MAX", 0, UINT_MAX, false},
      {"version before 0.1.0", 0, 99, false},
  };
  auto edit = [](const Header& h, size_t* size, unsigned* version, size_t library_size) {
    *size = h.size != 0 ? h.size : library_size;
    if (std::string(h.name) == "size of a newer struct") *size = library_size + 8;
    if (!h.keep_version) *version = h.version;
  };

  for (const Header& h : bad) {
    INFO(h.name);
    scclConfig_t config = SCCL_CONFIG_INITIALIZER;
    edit(h, &config.size, &config.version, sizeof(scclConfig_t));
    scclUniqueId id;
    REQUIRE(scclGetUniqueId(&id) == scclSuccess);
    scclComm_t comm = nullptr;
    CHECK(scclCommInitRankConfig(&comm, 1, id, 0, &config) == scclInvalidArgument);
    CHECK(comm == nullptr);
    CHECK(std::string(scclGetLastError(nullptr)).find("config") != std::string::npos);

    scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
    edit(h, &sparse.size, &sparse.version, sizeof(scclSparseConfig_t));
    CHECK(scclSparseConfigFromJson("{}", &sparse) == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find("sparse config") != std::string::npos);

    scclEventConfig_t event = SCCL_EVENT_CONFIG_INITIALIZER;
    edit(h, &event.size, &event.version, sizeof(scclEventConfig_t));
    CHECK(scclEventConfigFromJson("{}", &event) == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find("event config") != std::string::npos);
  }

  // Sparsifier creation refuses the same headers, and the communicator stays usable.
  REQUIRE_NO_RANK_FAILURES(
      sccl_test::runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
        for (const Header& h : bad) {
          scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
          edit(h, &sparse.size, &sparse.version, sizeof(scclSparseConfig_t));
          scclSparsifier_t sp = nullptr;
          expectInvalid(log, scclSparsifierCreate(&sp, comm, 64, scclFloat32, &sparse), comm,
                        std::string("sparsifier with ") + h.name, "sparse config");
        }
        allReduceWorks(rank, 2, comm, log);
      }));

  // The initializers themselves are accepted.
  scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
  CHECK(scclSparseConfigFromJson("{}", &sparse) == scclSuccess);
  scclEventConfig_t event = SCCL_EVENT_CONFIG_INITIALIZER;
  CHECK(scclEventConfigFromJson("{}", &event) == scclSuccess);
}

// Finding 2. Settings are read from the environment once per process, so a child process (this
// binary, running the hidden case below) sets them before its first sparsecoll call.
TEST_CASE("hostile child: timeouts from the environment", "[.hostile_env_child]") {
  sccl_test::RankProcess process = sccl_test::rankProcessFromEnvironment("SCCL_HOSTILE");
  if (!process.valid) return;  // run by hand outside the launcher: nothing to check
  REQUIRE(setenv("SCCL_TIMEOUT_MS", "10000000000000", 1) == 0);
  REQUIRE(setenv("SCCL_BOOTSTRAP_TIMEOUT_MS", "10000000000000", 1) == 0);
  scclComm_t comm = nullptr;
  CHECK(scclCommInitRank(&comm, 1, process.id, 0) == scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("SCCL_TIMEOUT_MS") != std::string::npos);
  scclUniqueId id;
  CHECK(scclGetUniqueId(&id) == scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("SCCL_BOOTSTRAP_TIMEOUT_MS") !=
        std::string::npos);
  // A config timeout (an int, so within the bound) still wins over the environment.
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = INT_MAX;
  CHECK(scclCommInitRankConfig(&comm, 1, process.id, 0, &config) == scclSuccess);
  if (comm != nullptr) {
    float x = 1, y = 0;
    CHECK(scclAllReduce(&x, &y, 1, scclFloat32, scclSum, comm, nullptr) == scclSuccess);
    CHECK(y == 1.0f);
    CHECK(scclCommDestroy(comm) == scclSuccess);
  }
}

TEST_CASE("hostile input: timeouts beyond INT_MAX ms in the environment are refused at creation",
          "[hostile]") {
  char exe[] = "/proc/self/exe";
  char name[] = "hostile child: timeouts from the environment";
  char* argv[] = {exe, name, nullptr};
  CHECK(sccl_test::launchRankProcesses("SCCL_HOSTILE", 1, argv, 60) == 0);
}

// Finding 3.
TEST_CASE("hostile input: collective sizes beyond 2^56 bytes are invalid arguments on every rank",
          "[hostile]") {
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(3, [](int rank, scclComm_t comm, RankLog& log) {
    std::vector<int8_t> send(64, 1), recv(3 * 64, 0);
    expectInvalid(log,
                  scclAllGather(send.data(), recv.data(), size_t{1} << 61, scclInt8, comm, nullptr),
                  comm, "all-gather of 2^61 int8", "2^56");
    expectInvalid(
        log,
        scclAllGather(send.data(), recv.data(), (size_t{1} << 55) + 1, scclInt8, comm, nullptr),
        comm, "all-gather of 2^55 + 1 int8 on 3 ranks", "2^56");
    expectInvalid(
        log,
        scclAllReduce(send.data(), recv.data(), size_t{1} << 62, scclInt8, scclSum, comm, nullptr),
        comm, "all-reduce of 2^62 int8", "2^56");
    expectInvalid(log,
                  scclAllReduce(send.data(), recv.data(), (size_t{1} << 54) + 1, scclFloat32,
                                scclSum, comm, nullptr),
                  comm, "all-reduce of 2^54 + 1 float32", "2^56");
    expectInvalid(
        log, scclBroadcast(send.data(), recv.data(), size_t{1} << 57, scclInt8, 0, comm, nullptr),
        comm, "broadcast of 2^57 int8", "2^56");
    size_t nselected = 7;
    int64_t idx[4];
    expectInvalid(log,
                  scclPartitionedSelect(send.data(), size_t{1} << 55, scclFloat32, 0, 1, 0.5, idx,
                                        nullptr, 4, &nselected, nullptr),
                  nullptr, "select over 2^55 float32", "2^56");
    log.check(nselected == 7, "select wrote nselected although refused");
    log.check(recv == std::vector<int8_t>(3 * 64, 0), "a refused call wrote recvbuf");
    allReduceWorks(rank, 3, comm, log);
  }));
}

// Finding 4.
TEST_CASE("hostile input: partitioned select takes a NULL buffer for an empty range", "[hostile]") {
  int64_t idx[4] = {-1, -1, -1, -1};
  size_t nselected = 99;
  CHECK(scclPartitionedSelect(nullptr, 100, scclFloat32, 40, 40, 0.5, idx, nullptr, 4, &nselected,
                              nullptr) == scclSuccess);
  CHECK(nselected == 0);
  CHECK(idx[0] == -1);
  nselected = 99;
  CHECK(scclPartitionedSelect(nullptr, 0, scclFloat16, 0, 0, 0.0, idx, nullptr, 4, &nselected,
                              nullptr) == scclSuccess);
  CHECK(nselected == 0);
  // A non-empty range still needs the buffer.
  CHECK(scclPartitionedSelect(nullptr, 100, scclFloat32, 40, 41, 0.5, idx, nullptr, 4, &nselected,
                              nullptr) == scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("buf is NULL") != std::string::npos);
}

// Finding 5.
TEST_CASE("hostile input: partially overlapping send and receive buffers are refused",
          "[hostile]") {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 16;
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(kRanks, [](int rank, scclComm_t comm,
                                                               RankLog& log) {
    std::vector<float> recv((kRanks + 1) * kCount, 0.0f);
    // All-gather: only recv + rank * sendcount is in place.
    const size_t wrong_slot = size_t((rank + 1) % kRanks) * kCount;
    for (size_t offset : {size_t{1}, wrong_slot, kRanks * kCount - 1}) {
      expectInvalid(
          log, scclAllGather(recv.data() + offset, recv.data(), kCount, scclFloat32, comm, nullptr),
          comm, "all-gather with sendbuf = recvbuf + " + std::to_string(offset), "overlaps");
    }
    // All-reduce: only send == recv is in place.
    expectInvalid(
        log,
        scclAllReduce(recv.data() + 3, recv.data(), kCount, scclFloat32, scclSum, comm, nullptr),
        comm, "all-reduce with sendbuf = recvbuf + 3", "overlaps");
    expectInvalid(
        log,
        scclAllReduce(recv.data(), recv.data() + 3, kCount, scclFloat32, scclSum, comm, nullptr),
        comm, "all-reduce with recvbuf = sendbuf + 3", "overlaps");
    // The in-place forms and disjoint buffers work.
    float* slot = recv.data() + size_t(rank) * kCount;
    for (size_t i = 0; i < kCount; ++i) slot[i] = float(rank * 100 + int(i));
    log.checkResult(scclAllGather(slot, recv.data(), kCount, scclFloat32, comm, nullptr),
                    scclSuccess, "in-place all-gather");
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < kCount; ++i)
        log.check(recv[size_t(r) * kCount + i] == float(r * 100 + int(i)), "in-place all-gather");
    std::vector<float> adjacent(2 * kCount, 1.0f);
    log.checkResult(scclAllReduce(adjacent.data(), adjacent.data() + kCount, kCount, scclFloat32,
                                  scclSum, comm, nullptr),
                    scclSuccess, "all-reduce into the adjacent, disjoint half");
    log.check(adjacent[kCount] == float(kRanks), "disjoint all-reduce sum");
    allReduceWorks(rank, kRanks, comm, log);
  }));
}

// Finding 6.
TEST_CASE("hostile input: unused unique ids cost no thread each", "[hostile]") {
  const int threads_before = countEntries("/proc/self/task");
  REQUIRE(threads_before > 0);
  constexpr int kIds = 500;
  for (int i = 0; i < kIds; ++i) {
    scclUniqueId id;
    REQUIRE(scclGetUniqueId(&id) == scclSuccess);
  }
  const int threads_after = countEntries("/proc/self/task");
  INFO("threads before " << threads_before << ", after " << kIds << " ids " << threads_after);
  CHECK(threads_after <= threads_before + 1);  // the one root thread of the process
  // Ids still work: a fresh one makes a 2-rank communicator.
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(
      2, [](int rank, scclComm_t comm, RankLog& log) { allReduceWorks(rank, 2, comm, log); }));
}

// Finding 7.
TEST_CASE(
    "hostile input: a survivor's async error reports a peer's timeout or abort without a call",
    "[hostile]") {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = 300;
  SECTION("a peer timed out") {
    std::vector<scclComm_t> comms = sccl_test::initLocalComms(2, &config);
    REQUIRE(comms.size() == 2);
    // Rank 0 waits in a barrier that rank 1 never enters, and times out.
    CHECK(scclBarrier(comms[0]) == scclTimeout);
    scclResult_t async = scclSuccess;
    CHECK(scclCommGetAsyncError(comms[1], &async) == scclSuccess);
    CHECK(async == scclRemoteError);
    CHECK(lastError(comms[1]).find("timed out") != std::string::npos);
    CHECK(scclBarrier(comms[1]) == scclRemoteError);  // refused at once
    for (scclComm_t comm : comms) CHECK(scclCommDestroy(comm) == scclSuccess);
  }
  SECTION("a peer aborted") {
    std::vector<scclComm_t> comms = sccl_test::initLocalComms(2, &config);
    REQUIRE(comms.size() == 2);
    scclResult_t async = scclRemoteError;
    CHECK(scclCommGetAsyncError(comms[1], &async) == scclSuccess);
    CHECK(async == scclSuccess);  // healthy before the abort
    CHECK(scclCommAbort(comms[0]) == scclSuccess);
    CHECK(scclCommGetAsyncError(comms[1], &async) == scclSuccess);
    CHECK(async == scclRemoteError);
    CHECK(lastError(comms[1]).find("aborted") != std::string::npos);
    CHECK(scclCommDestroy(comms[1]) == scclSuccess);
  }
}

// Finding 8: documented behaviour (docs/api.md): the statistics describe the last completed
// call; a call refused under scclNonFiniteError changes none of them.
TEST_CASE("hostile input: statistics keep the last completed call after a non-finite refusal",
          "[hostile]") {
  constexpr size_t kCount = 1024;
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t config = sccl_test::sparseConfig("topk", 0.05);
    config.nonFinite = scclNonFiniteError;
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    std::vector<float> grad(kCount), out(kCount);
    for (size_t i = 0; i < kCount; ++i) grad[i] = float(sccl_test::testValue(1, rank, i));
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "good call");
    scclSparseStats_t good{};
    good.size = sizeof(good);
    log.checkResult(scclSparsifierGetStats(sp, &good), scclSuccess, "stats");
    grad[5] = NAN;
    expectInvalid(log,
                  scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp,
                                      comm, nullptr),
                  comm, "call with a NaN under policy error", "NaN");
    scclSparseStats_t after{};
    after.size = sizeof(after);
    log.checkResult(scclSparsifierGetStats(sp, &after), scclSuccess, "stats");
    log.check(after.iteration == good.iteration && after.bytesSent == good.bytesSent &&
                  after.density == good.density && after.kGlobal == good.kGlobal &&
                  after.nonFinite == good.nonFinite && after.totalBytesSent == good.totalBytesSent,
              "the refused call changed the statistics");
    grad[5] = 1.0f;
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "good call after the refusal");
    log.checkResult(scclSparsifierGetStats(sp, &after), scclSuccess, "stats");
    log.check(after.iteration == good.iteration + 1, "iteration after the next good call");
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
  }));
}

// Finding 9.
TEST_CASE("hostile input: an unknown algorithm name is answered with the registered ones",
          "[hostile]") {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  CHECK(scclSparseConfigFromJson(R"({"algorithm": "no_such_preset"})", &config) ==
        scclInvalidArgument);
  std::string message = scclGetLastError(nullptr);
  INFO(message);
  for (const char* preset : {"dense", "topk", "exdyna", "s2", "micro_sync_free"})
    CHECK(message.find(preset) != std::string::npos);
  CHECK(scclSparseConfigFromJson(R"({"estimator": "no_such_estimator"})", &config) ==
        scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("scaling") != std::string::npos);
  // The struct path says the same at creation.
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t bad = sccl_test::sparseConfig("no_such_preset", 0.01);
    scclSparsifier_t sp = nullptr;
    expectInvalid(log, scclSparsifierCreate(&sp, comm, 64, scclFloat32, &bad), comm,
                  "create with an unknown preset", "exdyna");
    allReduceWorks(rank, 2, comm, log);
  }));
}

// Finding 10.
TEST_CASE("hostile input: every boolean JSON key takes true false 1 and 0 alike", "[hostile]") {
  for (const char* key : {"error_feedback", "stream_ordered"}) {
    for (const char* value : {"true", "false", "1", "0"}) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      // stream_ordered 1 needs a stream-ordered preset (its range check).
      const std::string json =
          std::string("{\"algorithm\": \"micro_sync_free\", \"") + key + "\": " + value + "}";
      INFO(json);
      REQUIRE(scclSparseConfigFromJson(json.c_str(), &config) == scclSuccess);
      const int want = std::string(value) == "true" || std::string(value) == "1" ? 1 : 0;
      CHECK((std::string(key) == "error_feedback" ? config.errorFeedback : config.streamOrdered) ==
            want);
    }
    for (const char* value : {"2", "-1", "1.0", "\"true\"", "null"}) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      const std::string json = std::string("{\"") + key + "\": " + value + "}";
      INFO(json);
      CHECK(scclSparseConfigFromJson(json.c_str(), &config) == scclInvalidArgument);
      CHECK(std::string(scclGetLastError(nullptr)).find(key) != std::string::npos);
    }
  }
  for (const char* value : {"true", "false", "1", "0"}) {
    scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
    const std::string json = std::string("{\"synchronous\": ") + value + "}";
    INFO(json);
    REQUIRE(scclEventConfigFromJson(json.c_str(), &config) == scclSuccess);
    CHECK(config.synchronous ==
          (std::string(value) == "true" || std::string(value) == "1" ? 1 : 0));
  }
  scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
  CHECK(scclEventConfigFromJson(R"({"synchronous": 2})", &config) == scclInvalidArgument);
}

// Finding 11.
TEST_CASE("hostile input: the dense preset follows the non-finite policy on every rank",
          "[hostile]") {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 257;
  constexpr float kSentinel = 12345.0f;
  for (scclNonFinitePolicy_t policy : {scclNonFiniteError, scclNonFinitePropagate}) {
    INFO((policy == scclNonFiniteError ? "policy error" : "policy propagate"));
    REQUIRE_NO_RANK_FAILURES(
        sccl_test::runLocalRanks(kRanks, [&](int rank, scclComm_t comm, RankLog& log) {
          scclSparseConfig_t config = sccl_test::sparseConfig("dense", 0.01);
          config.nonFinite = policy;
          scclSparsifier_t sp = nullptr;
          if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                               scclSuccess, "create"))
            return;
          std::vector<float> grad(kCount), out(kCount, kSentinel);
          for (size_t i = 0; i < kCount; ++i) grad[i] = float(sccl_test::testValue(3, rank, i));
          if (rank == 1) grad[100] = INFINITY;  // only rank 1's gradient is bad
          const scclResult_t result = scclSparseAllreduce(grad.data(), out.data(), kCount,
                                                          scclFloat32, scclSum, sp, comm, nullptr);
          scclSparseStats_t stats{};
          stats.size = sizeof(stats);
          log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "stats");
          log.check(stats.iteration == 0, "the non-finite step counted as completed");
          if (policy == scclNonFiniteError) {
            expectInvalid(log, result, comm, "dense call with Inf on rank 1", "rank 1");
            bool untouched = true;
            for (float v : out) untouched = untouched && v == kSentinel;
            log.check(untouched, "recvbuf written under policy error");
          } else {
            log.checkResult(result, scclSuccess, "dense call with Inf on rank 1");
            bool all_nan = true;
            for (float v : out) all_nan = all_nan && std::isnan(v);
            log.check(all_nan, "recvbuf is not all NaN under policy propagate");
          }
          // The next good call sums exactly.
          if (rank == 1) grad[100] = 0.0f;
          if (log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32,
                                                  scclSum, sp, comm, nullptr),
                              scclSuccess, "good dense call")) {
            float want = 0;
            for (int r = 0; r < kRanks; ++r)
              want += r == 1 ? 0.0f : float(sccl_test::testValue(3, r, 100));
            log.check(out[100] == want,
                      "good dense call after the refused one: " + std::to_string(out[100]) +
                          " != " + std::to_string(want));
          }
          log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
          allReduceWorks(rank, kRanks, comm, log);
        }));
  }
}

// Finding 3 for the objects that own buffers, and finding 5 for the sparse all-reduce.
TEST_CASE("hostile input: sparsifiers and event communicators beyond 2^56 bytes are refused",
          "[hostile]") {
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(2, [](int rank, scclComm_t comm,
                                                          RankLog& log) {
    scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
    scclSparsifier_t sp = nullptr;
    // 2^55 float16 gradients: the float32 residual is 2^57 bytes.
    expectInvalid(log, scclSparsifierCreate(&sp, comm, size_t{1} << 55, scclFloat16, &sparse),
                  comm, "sparsifier of 2^55 float16", "2^56");
    log.check(sp == nullptr, "a refused sparsifier was returned");
    const size_t sizes[1] = {size_t{1} << 54};
    const scclEventConfig_t event = SCCL_EVENT_CONFIG_INITIALIZER;
    scclEventComm_t ec = nullptr;
    expectInvalid(log,
                  scclEventCommCreate(&ec, comm, size_t{1} << 54, scclFloat64, sizes, 1, nullptr,
                                      0, nullptr, &event),
                  comm, "event communicator of 2^54 float64", "2^56");
    allReduceWorks(rank, 2, comm, log);
  }));
}

TEST_CASE("hostile input: a sparse all-reduce with partially overlapping buffers is refused",
          "[hostile]") {
  constexpr size_t kCount = 256;
  REQUIRE_NO_RANK_FAILURES(sccl_test::runLocalRanks(2, [](int rank, scclComm_t comm,
                                                          RankLog& log) {
    for (const char* algorithm : {"dense", "topk"}) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      config.algorithm = algorithm;
      config.density = 0.1;
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                           scclSuccess, "create"))
        return;
      std::vector<float> buffer(2 * kCount, 1.0f);
      expectInvalid(log,
                    scclSparseAllreduce(buffer.data() + 5, buffer.data(), kCount, scclFloat32,
                                        scclSum, sp, comm, nullptr),
                    comm, std::string(algorithm) + " with sendbuf = recvbuf + 5", "overlaps");
      // In place still works, the same on every rank.
      log.checkResult(scclSparseAllreduce(buffer.data(), buffer.data(), kCount, scclFloat32,
                                          scclSum, sp, comm, nullptr),
                      scclSuccess, std::string(algorithm) + " in place");
      scclSparsifierDestroy(sp);
    }
    allReduceWorks(rank, 2, comm, log);
  }));
}
