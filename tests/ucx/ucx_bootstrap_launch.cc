// Entry point of the UCX multi-process tests, launched without MPI:
//   sccl_ucx_tests --np N [--kill R] [catch arguments]
// The parent makes a unique id (starting the bootstrap's root service in itself), starts N
// copies of this binary as ranks 0..N-1 (the id and rank in environment variables), waits for
// them under a watchdog and exits with the worst of their exit codes. Each rank joins a world
// communicator with transport "ucx", runs the same Catch2 session, and the ranks agree on the
// outcome (an all-reduce of the exit codes) before leaving. With --kill R, rank R is expected to
// die by SIGKILL (the peer-killed test): the parent accepts that, and the survivors skip the
// agreement, which would need the dead rank.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "support/rank_processes.h"
#include "transports/transport_registry.h"
#include "transports/ucx/ucx_transport.h"
#include "ucx_test_world.h"

namespace sccl_ucx_test {
namespace {

World g_world;
constexpr int kWatchdogSeconds = 280;

int runParent(int nranks, int kill_rank, char** argv) {
  return sccl_test::launchRankProcesses("SCCL_UCX_TEST", nranks, argv, kWatchdogSeconds,
                                        kill_rank);
}

int runRank(int argc, char** argv) {
  const sccl_test::RankProcess process = sccl_test::rankProcessFromEnvironment("SCCL_UCX_TEST");
  if (!process.valid) return 2;
  const scclUniqueId id = process.id;
  g_world.rank = process.rank;
  g_world.nranks = process.nranks;
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.transport = "ucx";
  config.commName = "world";
  if (scclCommInitRankConfig(&g_world.comm, g_world.nranks, id, g_world.rank, &config) !=
      scclSuccess) {
    std::fprintf(stderr, "rank %d: world communicator over UCX failed: %s\n", g_world.rank,
                 scclGetLastError(nullptr));
    return 3;
  }
  int result = Catch::Session().run(argc, argv);
  if (g_world.killed_rank >= 0) {
    // The dead rank's communicator cannot agree on anything: each survivor answers for itself.
    scclCommAbort(g_world.comm);
    return result;
  }
  // The number of ranks that failed (the public API sums only).
  int failed = result != 0 ? 1 : 0, failures = 0, worst = 0;
  if (scclAllReduce(&failed, &failures, 1, scclInt32, scclSum, g_world.comm, nullptr) ==
      scclSuccess) {
    worst = failures > 0 ? std::max(result, 1) : 0;
  } else {
    std::fprintf(stderr, "rank %d: agreement failed: %s\n", g_world.rank,
                 scclGetLastError(g_world.comm));
    worst = 4;
  }
  scclCommDestroy(g_world.comm);
  return worst;
}

}  // namespace

const World& ucxWorld() {
  return g_world;
}

TestTransport makeUcxTransport(int64_t timeout_ms) {
  TestTransport made;
  scclUniqueId id{};
  if (g_world.rank == 0 && scclGetUniqueId(&id) != scclSuccess) return made;
  if (scclBroadcast(&id, &id, sizeof(id), scclUint8, 0, g_world.comm, nullptr) != scclSuccess)
    return made;
  if (sccl::Bootstrap::connect(id, g_world.rank, g_world.nranks, timeout_ms, &made.bootstrap) !=
      scclSuccess)
    return made;
  sccl::TransportSetup setup;
  setup.rank = g_world.rank;
  setup.nranks = g_world.nranks;
  setup.timeout_ms = timeout_ms;
  setup.bootstrap = made.bootstrap.get();
  setup.comm_name = "test";
  if (sccl::createUcxTransport(setup, &made.transport) != scclSuccess) {
    std::fprintf(stderr, "rank %d: UCX transport creation failed: %s\n", g_world.rank,
                 sccl::threadLastError().c_str());
    made.transport.reset();
  }
  return made;
}

bool worldBarrier() {
  return scclBarrier(g_world.comm) == scclSuccess;
}

}  // namespace sccl_ucx_test

int main(int argc, char** argv) {
  // --np N and --kill R are ours; the rest goes to Catch (the children get the same argv).
  int nranks = 0, kill_rank = -1;
  std::vector<char*> catch_args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--np") == 0 && i + 1 < argc) {
      nranks = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--kill") == 0 && i + 1 < argc) {
      kill_rank = std::atoi(argv[++i]);
    } else {
      catch_args.push_back(argv[i]);
    }
  }
  catch_args.push_back(nullptr);
  if (std::getenv("SCCL_UCX_TEST_RANK") == nullptr) {
    if (nranks < 1) {
      std::fprintf(stderr, "usage: %s --np N [--kill R] [catch arguments]\n", argv[0]);
      return 2;
    }
    return sccl_ucx_test::runParent(nranks, kill_rank, argv);
  }
  sccl_ucx_test::g_world.killed_rank = kill_rank;
  return sccl_ucx_test::runRank(static_cast<int>(catch_args.size()) - 1, catch_args.data());
}
