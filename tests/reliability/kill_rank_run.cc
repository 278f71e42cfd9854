// A rank killed with SIGKILL before, during or after a collective (docs/reliability.md).
//
// Launch "fork" (no MPI): this process starts the bootstrap root (scclGetUniqueId) and forks
// NRANKS rank processes. Transport "bootstrap" exercises the TCP bootstrap's own all-gather
// rounds (what every multi-process transport is set up through); any other name is a
// multi-process transport of the registry, created with scclCommInitRankConfig and exercised
// with scclAllReduce (the CTest list in tests/reliability/CMakeLists.txt names which). One rank
// (the victim) is killed with SIGKILL:
//   before  the victim dies before it joins: the others must fail their creation (scclTimeout
//           after the timeout, or an error naming the missing rank);
//   during  while all ranks loop over collectives;
//   after   once the victim completed its collectives, while the others are in one more.
// Every survivor must return an error within timeout + 5 s of the kill, then abort/destroy
// must return, and its descriptors (/proc/self/fd) and threads (/proc/self/task) must be back
// to what they were before it created anything. A 60 s watchdog in this process kills
// everything and fails the run on a hang. Repeated TRIALS times with the victim rotating;
// prints the worst detection time. A trial whose ranks fail before the kill (their communicator
// creation timed out, say) did not test the kill: it is reported and run again, at most twice,
// provided every rank ended by itself within timeout + 5 s (else it is a hang: a failure).
//
// Launch "mpi" (under mpirun, one process per rank): the victim SIGKILLs itself at the chosen
// moment; Open MPI 4.1 without ULFM then ends the whole job (mpirun reports the death and
// kills the others). The CTest (kill_rank_mpi_*) checks that mpirun ends with a failure
// within the watchdog instead of hanging; this program only provides the ranks.
//
// Usage: sccl_kill_rank_run fork TRANSPORT before|during|after NRANKS TRIALS TIMEOUT_MS
//        sccl_kill_rank_run mpi before|during|after TIMEOUT_MS     (under mpirun)
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sccl_build_config.h"
#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/bootstrap.h"
#if SCCL_BUILD_WITH_MPI
#include <mpi.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

int countEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n - (std::strcmp(dir, "/proc/self/fd") == 0 ? 1 : 0);  // the DIR's own descriptor
}

enum class When { Before, During, After };

When parseWhen(const char* text) {
  if (std::strcmp(text, "before") == 0) return When::Before;
  if (std::strcmp(text, "during") == 0) return When::During;
  if (std::strcmp(text, "after") == 0) return When::After;
  std::fprintf(stderr, "unknown moment %s (before, during, after)\n", text);
  std::exit(2);
}

// Shared between the launcher and its rank processes (MAP_SHARED, set up before fork).
struct Shared {
  // The job's unique id, published by the launcher after the ranks were forked (id_ready = 1).
  scclUniqueId id;
  std::atomic<int> id_ready{0};
  std::atomic<int64_t> kill_ms{0};     // when the victim was killed
  std::atomic<int> ready{0};           // ranks inside their collective loop
  std::atomic<int> victim_done{0};     // the victim finished its collectives ("after")
  std::atomic<int64_t> detect_ms[64];  // per rank: when it saw the error
  std::atomic<int> code[64];           // per rank: the error code
  std::atomic<int> leaked[64];         // per rank: 1 if descriptors/threads did not return
};

constexpr int kRoundsAfter = 20;

// One collective of the transport under test. "bootstrap": a bootstrap round.
struct Member {
  std::unique_ptr<sccl::Bootstrap> bootstrap;
  scclComm_t comm = nullptr;

  scclResult_t collective(int nranks) {
    if (bootstrap) {
      uint64_t mine = 42;
      std::vector<uint64_t> all(size_t(nranks), 0);
      return bootstrap->allGather(&mine, all.data(), sizeof mine);
    }
    float value = 1, sum = 0;
    return scclAllReduce(&value, &sum, 1, scclFloat32, scclSum, comm, nullptr);
  }

  void finish() {
    bootstrap.reset();
    if (comm != nullptr) scclCommAbort(comm);
    comm = nullptr;
  }
};

// A rank process: returns its exit code (0: behaved; the victim is killed before returning).
int runRank(const std::string& transport, const scclUniqueId& id, int rank, int nranks, int victim,
            When when, int timeout_ms, Shared* shared) {
  const int fds_before = countEntries("/proc/self/fd");
  const int threads_before = countEntries("/proc/self/task");
  if (rank == victim && when == When::Before) pause();  // killed before it joins
  Member member;
  scclResult_t result;
  if (transport == "bootstrap") {
    result = sccl::Bootstrap::connect(id, rank, nranks, timeout_ms, &member.bootstrap);
  } else {
    scclConfig_t config = SCCL_CONFIG_INITIALIZER;
    config.transport = transport.c_str();
    config.timeoutMs = timeout_ms;
    result = scclCommInitRankConfig(&member.comm, nranks, id, rank, &config);
  }
  if (result == scclSuccess) {
    shared->ready.fetch_add(1);
    int rounds = 0;
    for (;;) {
      if (rank == victim && when == When::After && rounds == kRoundsAfter) {
        shared->victim_done = 1;
        pause();  // killed after its last collective
      }
      result = member.collective(nranks);
      if (result != scclSuccess) break;
      ++rounds;
      if (when == When::After && rank != victim && rounds == kRoundsAfter) {
        while (shared->victim_done.load() == 0) usleep(1000);
      }
    }
  }
  shared->detect_ms[rank] = nowMs();
  shared->code[rank] = int(result);
  member.finish();
  // The bootstrap's sockets and any transport threads are gone once abort/destroy returned.
  const int fds_after = countEntries("/proc/self/fd");
  const int threads_after = countEntries("/proc/self/task");
  shared->leaked[rank] = fds_after != fds_before || threads_after != threads_before;
  if (shared->leaked[rank]) {
    std::printf("rank %d: descriptors %d -> %d, threads %d -> %d\n", rank, fds_before, fds_after,
                threads_before, threads_after);
  }
  return 0;
}

int runForkTrials(const std::string& transport, When when, int nranks, int trials, int timeout_ms) {
  if (nranks < 2 || nranks > 64) return 2;
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) return 2;
  int64_t worst_ms = 0;
  int failures = 0, repeated = 0, retries = 0;  // retries: of the current trial
  for (int trial = 0; trial < trials;) {
    new (shared) Shared();
    const int victim = trial % nranks;
    // Fork first, then start the bootstrap root (scclGetUniqueId starts its thread): a process
    // forked while another of its threads holds a lock inherits the lock held by nobody. Forked
    // after the root had started, a rank sometimes deadlocked in ucp_init on UCX's memory-hook
    // lock (ucm_event_enter_exclusive), found with gdb on a hung rank.
    std::fflush(stdout);
    std::vector<pid_t> pids;
    for (int r = 0; r < nranks; ++r) {
      pid_t pid = fork();
      if (pid == 0) {
        const int64_t waiting_since = nowMs();
        while (shared->id_ready.load(std::memory_order_acquire) == 0) {
          if (nowMs() - waiting_since > 30000) _exit(3);
          usleep(200);
        }
        _exit(runRank(transport, shared->id, r, nranks, victim, when, timeout_ms, shared));
      }
      pids.push_back(pid);
    }
    if (scclGetUniqueId(&shared->id) != scclSuccess) {
      for (pid_t pid : pids) kill(pid, SIGKILL);
      return 2;
    }
    shared->id_ready.store(1, std::memory_order_release);
    // The moment: before (at once), during (ranks in their loop, then 100 ms more), after (the
    // victim finished its rounds). A rank that fails before the moment (a communicator creation
    // that timed out, say) means the moment will never come: stop waiting.
    auto someone_failed = [&] {
      for (int r = 0; r < nranks; ++r)
        if (shared->detect_ms[r].load() != 0) return true;
      return false;
    };
    int64_t start = nowMs();
    if (when == When::During) {
      while (shared->ready.load() < nranks && !someone_failed() && nowMs() - start < 30000)
        usleep(1000);
      usleep(100000);
    } else if (when == When::After) {
      while (shared->victim_done.load() == 0 && !someone_failed() && nowMs() - start < 30000)
        usleep(1000);
    }
    // The trial tests the kill only if every rank reached the moment and none had failed yet;
    // otherwise its outcome says nothing about detection: it is reported and run again (at most
    // twice more), and counts as a failure after that.
    const bool moment_reached =
        !someone_failed() &&
        (when == When::Before || (when == When::During && shared->ready.load() == nranks) ||
         (when == When::After && shared->victim_done.load() == 1));
    shared->kill_ms = nowMs();
    if (!moment_reached) {
      // Every rank must still end by itself (its error within the timeout): one that does not
      // is a hang, a failure that no rerun excuses.
      std::vector<bool> ended(size_t(nranks), false);
      int running = nranks;
      while (running > 0 && nowMs() - shared->kill_ms.load() < timeout_ms + 5000) {
        for (int r = 0; r < nranks; ++r) {
          if (!ended[size_t(r)] && waitpid(pids[size_t(r)], nullptr, WNOHANG) == pids[size_t(r)]) {
            ended[size_t(r)] = true;
            --running;
          }
        }
        usleep(2000);
      }
      for (int r = 0; r < nranks; ++r) {
        if (ended[size_t(r)]) continue;
        kill(pids[size_t(r)], SIGKILL);
        waitpid(pids[size_t(r)], nullptr, 0);
      }
      if (running > 0) {
        std::printf(
            "trial %d: %d rank(s) neither reached the moment nor ended within %d ms "
            "(hung before the kill)\n",
            trial, running, timeout_ms + 5000);
        ++failures;
        ++trial;
        retries = 0;
        continue;
      }
      std::printf("trial %d: the ranks failed before the kill (%d of %d had started their loop)",
                  trial, shared->ready.load(), nranks);
      if (retries < 2) {
        std::printf("; run again\n");
        ++repeated;
        ++retries;
        continue;
      }
      std::printf("; counted as a failure\n");
      ++failures;
      ++trial;
      retries = 0;
      continue;
    }
    kill(pids[size_t(victim)], SIGKILL);
    // Watchdog: every survivor must have exited within 60 s of the kill.
    int alive = nranks;
    bool hung = false;
    std::vector<bool> reaped(size_t(nranks), false);
    while (alive > 0) {
      for (int r = 0; r < nranks; ++r) {
        if (reaped[size_t(r)]) continue;
        int status = 0;
        if (waitpid(pids[size_t(r)], &status, WNOHANG) == pids[size_t(r)]) {
          reaped[size_t(r)] = true;
          --alive;
        }
      }
      if (alive > 0 && nowMs() - shared->kill_ms.load() > 60000) {
        hung = true;
        for (int r = 0; r < nranks; ++r)
          if (!reaped[size_t(r)]) kill(pids[size_t(r)], SIGKILL);
      }
      usleep(2000);
    }
    int64_t trial_worst = 0;
    for (int r = 0; r < nranks; ++r) {
      if (r == victim) continue;
      int64_t detect = shared->detect_ms[r].load() - shared->kill_ms.load();
      int code = shared->code[r].load();
      trial_worst = std::max(trial_worst, detect);
      bool late = shared->detect_ms[r].load() == 0 || detect > timeout_ms + 5000;
      bool wrong = code == scclSuccess;
      if (late || wrong || shared->leaked[r].load() || hung) {
        ++failures;
        std::printf("trial %d rank %d: %s after %lld ms%s%s\n", trial, r,
                    scclGetErrorString(scclResult_t(code)), static_cast<long long>(detect),
                    hung ? " (hung: killed by the 60 s watchdog)" : "",
                    shared->leaked[r].load() ? " (descriptors or threads leaked)" : "");
      }
    }
    worst_ms = std::max(worst_ms, trial_worst);
    std::printf("trial %d: victim rank %d, survivors failed within %lld ms\n", trial, victim,
                static_cast<long long>(trial_worst));
    ++trial;
    retries = 0;
  }
  std::printf(
      "kill_rank %s %s: %d trials, %d ranks, timeout %d ms, worst detection %lld ms, "
      "%d failures, %d trials run again (ranks failed before the kill)\n",
      transport.c_str(),
      when == When::Before   ? "before"
      : when == When::During ? "during"
                             : "after",
      trials, nranks, timeout_ms, static_cast<long long>(worst_ms), failures, repeated);
  return failures == 0 ? 0 : 1;
}

#if SCCL_BUILD_WITH_MPI
int runMpiRank(When when, int timeout_ms) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int victim = nranks - 1;
  if (rank == victim && when == When::Before) raise(SIGKILL);
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = timeout_ms;
  scclComm_t comm = nullptr;
  MPI_Comm world = MPI_COMM_WORLD;
  scclResult_t result = scclCommInitMpi(&comm, &world, &config);
  for (int round = 0; result == scclSuccess; ++round) {
    if (rank == victim && when == When::During && round == 50) raise(SIGKILL);
    if (rank == victim && when == When::After && round == 100) raise(SIGKILL);
    float value = 1, sum = 0;
    result = scclAllReduce(&value, &sum, 1, scclFloat32, scclSum, comm, nullptr);
  }
  // Reached only if MPI returned an error instead of ending the job (ULFM-like behaviour).
  std::printf("rank %d: %s\n", rank, scclGetErrorString(result));
  scclCommAbort(comm);
  return 3;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 7 && std::strcmp(argv[1], "fork") == 0) {
    return runForkTrials(argv[2], parseWhen(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]),
                         std::atoi(argv[6]));
  }
#if SCCL_BUILD_WITH_MPI
  if (argc >= 4 && std::strcmp(argv[1], "mpi") == 0)
    return runMpiRank(parseWhen(argv[2]), std::atoi(argv[3]));
#endif
  std::fprintf(stderr,
               "usage: %s fork TRANSPORT before|during|after NRANKS TRIALS TIMEOUT_MS\n"
               "       %s mpi before|during|after TIMEOUT_MS   (under mpirun)\n",
               argv[0], argv[0]);
  return 2;
}
