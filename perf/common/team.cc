// ThreadTeam: helpers wait for a new generation, run the shared work item, and report back.
#include "team.h"

#include <algorithm>

namespace sccl_perf {

ThreadTeam::ThreadTeam(int nthreads) {
  for (int t = 1; t < std::max(nthreads, 1); ++t)
    helpers_.emplace_back([this, t] { helperLoop(t); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void ThreadTeam::run(const std::function<void(int, int)>& work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work_ = &work;
    running_ = static_cast<int>(helpers_.size());
    ++generation_;
  }
  start_.notify_all();
  work(0, size());
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return running_ == 0; });
}

void ThreadTeam::helperLoop(int thread) {
  unsigned long seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const std::function<void(int, int)>* work = work_;
    lock.unlock();
    (*work)(thread, size());
    lock.lock();
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace sccl_perf
