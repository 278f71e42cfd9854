// Call agreement (comm/call_agreement.h): ranks that call different things all get
// scclInvalidUsage with the same message naming the field, and the communicator stays usable.
// Every case here crashed, hung or succeeded silently before the agreement.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "support/agreement_cases.h"
#include "support/local_ranks.h"

namespace {

using sccl_test::AgreementCase;
using sccl_test::RankLog;
using sccl_test::runLocalRanks;

// What one rank calls in a mismatched case (its own buffers, large enough for its own arguments).
using RankCall = std::function<scclResult_t(int rank, scclComm_t comm)>;

void checkStillUsable(int rank, scclComm_t comm, RankLog& log) {
  const std::string wrong = sccl_test::checkStillUsable(rank, comm);
  log.check(wrong.empty(), wrong);
}

// Runs the case on nranks threads: each must be refused as the case says, with one message, the
// same on every rank; then the communicator must still work.
std::vector<std::string> expectRefusedEverywhere(int nranks, const AgreementCase& c) {
  std::mutex mutex;
  std::vector<std::string> messages(static_cast<size_t>(nranks));
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    std::string message;
    const std::string wrong = sccl_test::runAgreementCase(c, rank, comm, &message);
    log.check(wrong.empty(), wrong);
    std::lock_guard<std::mutex> lock(mutex);
    messages[static_cast<size_t>(rank)] = message;
  });
  for (int r = 1; r < nranks; ++r) {
    if (messages[size_t(r)] != messages[0])
      failures.push_back(std::string(c.name) + ": rank " + std::to_string(r) +
                         "'s message differs from rank 0's: " + messages[size_t(r)] + " | " +
                         messages[0]);
  }
  return failures;
}

std::vector<std::string> expectRefusedEverywhere(int nranks, const RankCall& call,
                                                 const std::vector<std::string>& mentions) {
  return expectRefusedEverywhere(nranks, AgreementCase{"case", nranks, call, mentions});
}

}  // namespace

TEST_CASE("dense collectives: mismatched calls are refused on every rank, which stays usable",
          "[agreement]") {
  for (const AgreementCase& c : sccl_test::denseAgreementCases()) {
    for (int nranks : {2, 3, 4}) {
      if (nranks < c.min_ranks) continue;
      INFO(c.name << " on " << nranks << " ranks");
      CHECK_NO_RANK_FAILURES(expectRefusedEverywhere(nranks, c));
    }
  }
}

namespace {

constexpr size_t kSparseCount = 4096;

scclSparseConfig_t topkConfig() {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = "topk";
  config.density = 0.01;
  return config;
}

// Runs body with two sparsifiers created in order on every rank (identically configured).
struct SparseBodies {
  std::function<scclResult_t(int rank, scclComm_t, scclSparsifier_t a, scclSparsifier_t b)> call;
};

std::vector<std::string> expectSparseRefused(const SparseBodies& bodies,
                                             const std::vector<std::string>& mentions,
                                             int nranks = 2) {
  std::mutex mutex;
  std::vector<std::string> messages(static_cast<size_t>(nranks));
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    const scclSparseConfig_t config = topkConfig();
    scclSparsifier_t a = nullptr, b = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&a, comm, kSparseCount, scclFloat32, &config),
                         scclSuccess, "create A") ||
        !log.checkResult(scclSparsifierCreate(&b, comm, kSparseCount, scclFloat32, &config),
                         scclSuccess, "create B"))
      return;
    const scclResult_t got = bodies.call(rank, comm, a, b);
    const std::string message = scclGetLastError(comm);
    log.checkResult(got, scclInvalidUsage, "the mismatched call");
    for (const std::string& word : mentions)
      log.check(message.find(word) != std::string::npos, "'" + word + "' not in: " + message);
    {
      std::lock_guard<std::mutex> lock(mutex);
      messages[static_cast<size_t>(rank)] = message;
    }
    // The sparsifiers are usable too: a matched call on A gives the same result on every rank.
    std::vector<float> grad(kSparseCount), out(kSparseCount, -1.0f);
    for (size_t i = 0; i < kSparseCount; ++i)
      grad[i] = float(sccl_test::testValue(7, rank, i)) / 8.0f;
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kSparseCount, scclFloat32, scclSum,
                                        a, comm, nullptr),
                    scclSuccess, "a matched sparse all-reduce after the refused call");
    checkStillUsable(rank, comm, log);
    scclSparsifierDestroy(a);
    scclSparsifierDestroy(b);
  });
  for (int r = 1; r < nranks; ++r) {
    if (messages[size_t(r)] != messages[0])
      failures.push_back("rank " + std::to_string(r) + "'s message differs from rank 0's: " +
                         messages[size_t(r)] + " | " + messages[0]);
  }
  return failures;
}

scclResult_t sparseCall(scclComm_t comm, scclSparsifier_t sp, scclRedOp_t op) {
  std::vector<float> grad(kSparseCount, 0.5f), out(kSparseCount, 0.0f);
  return scclSparseAllreduce(grad.data(), out.data(), kSparseCount, scclFloat32, op, sp, comm,
                             nullptr);
}

}  // namespace

TEST_CASE("sparse all-reduce: mismatched calls are refused on every rank", "[agreement]") {
  SECTION("sparse all-reduce vs dense all-reduce") {
    REQUIRE_NO_RANK_FAILURES(expectSparseRefused(
        {[](int r, scclComm_t c, scclSparsifier_t a, scclSparsifier_t) {
          return r == 0 ? sparseCall(c, a, scclSum)
                        : sccl_test::allReduceOf(c, 8, scclFloat32, scclSum);
        }},
        {"operation is scclSparseAllreduce on rank(s) 0 but scclAllReduce on rank(s) 1"}));
  }
  SECTION("scclSum vs scclAvg") {
    REQUIRE_NO_RANK_FAILURES(
        expectSparseRefused({[](int r, scclComm_t c, scclSparsifier_t a, scclSparsifier_t) {
                              return sparseCall(c, a, r == 0 ? scclSum : scclAvg);
                            }},
                            {"reduction is scclSum on rank(s) 0 but scclAvg on rank(s) 1"}));
  }
  SECTION("two identically configured sparsifiers, A on rank 0 and B on rank 1") {
    REQUIRE_NO_RANK_FAILURES(
        expectSparseRefused({[](int r, scclComm_t c, scclSparsifier_t a, scclSparsifier_t b) {
                              return sparseCall(c, r == 0 ? a : b, scclSum);
                            }},
                            {"object (sparsifier or event communicator)"}));
  }
  SECTION("a sparsifier reset on one rank only (its call numbers differ)") {
    REQUIRE_NO_RANK_FAILURES(expectSparseRefused(
        {[](int r, scclComm_t c, scclSparsifier_t, scclSparsifier_t b) {
          const scclResult_t first = sparseCall(c, b, scclSum);  // matched: call 0 on both
          if (first != scclSuccess) return first;
          if (r == 0) (void)scclSparsifierReset(b);  // local: rank 0's B is at call 0 again
          return sparseCall(c, b, scclSum);
        }},
        {"the object's call number is 0 on rank(s) 0 but 1 on rank(s) 1"}));
  }
  SECTION("sparsifier creation vs dense all-reduce") {
    REQUIRE_NO_RANK_FAILURES(expectSparseRefused(
        {[](int r, scclComm_t c, scclSparsifier_t, scclSparsifier_t) {
          if (r == 1) return sccl_test::allReduceOf(c, 8, scclFloat32, scclSum);
          const scclSparseConfig_t config = topkConfig();
          scclSparsifier_t extra = nullptr;
          return scclSparsifierCreate(&extra, c, kSparseCount, scclFloat32, &config);
        }},
        {"scclSparsifierCreate on rank(s) 0 but scclAllReduce on rank(s) 1"}));
  }
}

namespace {

scclResult_t createEventComm(scclComm_t comm, scclEventComm_t* ec) {
  int rank = 0;
  scclCommUserRank(comm, &rank);
  const size_t sizes[2] = {6, 10};
  const scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
  return scclEventCommCreate(ec, comm, 16, scclFloat32, sizes, 2, nullptr, 0, nullptr, &config);
}

// Two event communicators A and B on every rank (2 ranks), then `call`.
std::vector<std::string> expectEventRefused(
    const std::function<scclResult_t(int, scclEventComm_t, scclEventComm_t)>& call,
    const std::vector<std::string>& mentions) {
  return expectRefusedEverywhere(
      2,
      [&](int rank, scclComm_t comm) -> scclResult_t {
        scclEventComm_t a = nullptr, b = nullptr;
        scclResult_t created = createEventComm(comm, &a);
        if (created != scclSuccess) return created;
        created = createEventComm(comm, &b);
        if (created != scclSuccess) return created;
        const scclResult_t got = call(rank, a, b);
        // Destroying is local on this transport and keeps the call's error text on the comm.
        scclEventCommDestroy(a);
        scclEventCommDestroy(b);
        return got;
      },
      mentions);
}

}  // namespace

TEST_CASE("EventGraD: mismatched collective calls are refused on every rank", "[agreement]") {
  SECTION("a step on rank 0, the model average on rank 1") {
    REQUIRE_NO_RANK_FAILURES(expectEventRefused(
        [&](int r, scclEventComm_t a, scclEventComm_t) {
          std::vector<float> mine(16, 1.0f), avg(16, 0.0f);
          return r == 0 ? scclEventCommStep(a, mine.data(), 16, scclFloat32, nullptr)
                        : scclEventCommAverageModel(a, mine.data(), avg.data(), 16, scclFloat32,
                                                    nullptr);
        },
        {"scclEventCommStep on rank(s) 0 but scclEventCommAverageModel on rank(s) 1"}));
  }
  SECTION("event communicator A on rank 0, B on rank 1") {
    REQUIRE_NO_RANK_FAILURES(expectEventRefused(
        [&](int r, scclEventComm_t a, scclEventComm_t b) {
          std::vector<float> mine(16, 1.0f);
          return scclEventCommStep(r == 0 ? a : b, mine.data(), 16, scclFloat32, nullptr);
        },
        {"object (sparsifier or event communicator)"}));
  }
}
