// The threaded parts under concurrency, for ThreadSanitizer (scripts/sanitize.sh tsan runs this
// binary's [threads] cases; they also run in every normal build):
//  - in-process ranks running sparse all-reduces large enough that the CPU backend splits each
//    kernel over its worker threads, on several communicators at once;
//  - scclCommAbort called from another thread while the other ranks are blocked in a collective
//    on the same job: they must come back with scclRemoteError well before their timeout.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "support/local_ranks.h"

using sccl_test::RankLog;

TEST_CASE("sparse all-reduces on concurrent jobs with the kernel thread pool", "[threads]") {
  constexpr size_t kCount = 200003;
  auto job = [&](const char* algorithm) {
    return sccl_test::runLocalRanks(3, [&](int rank, scclComm_t comm, RankLog& log) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      config.algorithm = algorithm;
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                           scclSuccess, "create"))
        return;
      std::vector<float> grad(kCount), out(kCount);
      for (int call = 0; call < 3; ++call) {
        for (size_t i = 0; i < kCount; ++i)
          grad[i] = float(sccl_test::testValue(uint32_t(call), rank, i)) * 0.125f;
        log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum,
                                            sp, comm, nullptr),
                        scclSuccess, "sparse all-reduce");
      }
      log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
    });
  };
  std::vector<std::string> failures_a, failures_b;
  std::thread other([&] { failures_a = job("exdyna"); });
  failures_b = job("s2");
  other.join();
  REQUIRE_NO_RANK_FAILURES(failures_a);
  REQUIRE_NO_RANK_FAILURES(failures_b);
}

TEST_CASE("abort from another thread releases ranks blocked in a collective", "[threads]") {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = 20000;
  std::vector<scclComm_t> comms = sccl_test::initLocalComms(3, &config);
  REQUIRE(comms.size() == 3);
  // Ranks 0 and 1 enter an all-reduce that rank 2 never joins; a fourth thread aborts rank 2.
  scclResult_t results[2] = {scclSuccess, scclSuccess};
  double seconds[2] = {0, 0};
  std::vector<std::thread> blocked;
  for (int r = 0; r < 2; ++r) {
    blocked.emplace_back([&, r] {
      std::vector<float> in(100000, 1.0f), out(100000);
      auto start = std::chrono::steady_clock::now();
      results[r] =
          scclAllReduce(in.data(), out.data(), in.size(), scclFloat32, scclSum, comms[r], nullptr);
      seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    scclCommAbort(comms[2]);
  });
  aborter.join();
  for (auto& t : blocked) t.join();
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << " returned after " << seconds[r] << " s");
    CHECK(results[r] == scclRemoteError);
    CHECK(seconds[r] < 10.0);  // released by the abort, not by the 20 s timeout
    scclResult_t async = scclSuccess;
    CHECK(scclCommGetAsyncError(comms[r], &async) == scclSuccess);
    CHECK(async == scclRemoteError);
    CHECK(scclCommDestroy(comms[r]) == scclSuccess);
  }
}
