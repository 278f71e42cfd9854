// A small fixed pool of worker threads shared by all CPU kernels of the process.
//
// Many threads may submit at once (the in-process transport runs every rank as a thread, and
// all of them call kernels), so a submission never waits for a free worker: the submitting
// thread runs tasks of its own job too, and finishes the job alone if every worker is busy.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace sccl {

class ThreadPool {
 public:
  // total_threads counts the submitting thread: the pool starts total_threads - 1 workers.
  explicit ThreadPool(int total_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that can work on one job at the same time (workers + the submitter).
  int concurrency() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(context, t) for t in [0, ntasks) and returns when all have finished. Tasks run in
  // any order on any of the pool's threads or the caller's; they must not throw.
  void run(size_t ntasks, void (*task)(void* context, size_t index), void* context);

  // Convenience over run() for a callable `fn(size_t index)`.
  template <typename Fn>
  void parallelFor(size_t ntasks, Fn&& fn) {
    if (ntasks == 1) {
      fn(size_t{0});
      return;
    }
    using Callable = std::remove_reference_t<Fn>;
    run(
        ntasks, [](void* ctx, size_t index) { (*static_cast<Callable*>(ctx))(index); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  struct Job;

  void workerLoop();
  // Claims and runs tasks of `job` until none is left; returns how many this thread ran.
  static size_t runClaimedTasks(Job& job);

  std::mutex mutex_;
  std::condition_variable work_available_;
  std::deque<Job*> queue_;  // jobs that may still have unclaimed tasks
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// The process-wide pool: SCCL_CPU_THREADS threads, or one per hardware thread when it is 0.
ThreadPool& cpuThreadPool();

// How many parts a kernel should split `count` elements into: 1 below min_part_elements (run
// inline, a pool round trip costs more than it saves), else up to the pool's concurrency with
// at least min_part_elements each. A test override (below) replaces the whole rule.
size_t kernelPartCount(size_t count, size_t min_part_elements);

// Testing hook: every kernel splits its work into exactly `parts` parts (fewer only when there
// are fewer elements), whatever the size; 0 restores the automatic rule. Returns the previous
// value. Lets tests prove results do not depend on the split on a machine with few cores.
int setKernelPartsForTesting(int parts);

}  // namespace sccl
