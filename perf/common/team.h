// A persistent team of threads for baselines that must use the same number of threads as the
// library (spawning threads per iteration would add their start-up to the measured time).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sccl_perf {

class ThreadTeam {
 public:
  explicit ThreadTeam(int nthreads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // Runs work(thread, nthreads) on every member (the caller is member 0) and waits for all.
  void run(const std::function<void(int thread, int nthreads)>& work);

 private:
  void helperLoop(int thread);

  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int, int)>* work_ = nullptr;
  unsigned long generation_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> helpers_;
};

}  // namespace sccl_perf
