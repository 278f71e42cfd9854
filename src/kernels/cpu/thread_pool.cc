// Job queue of the CPU kernel pool. A job lives on its submitter's stack, so the submitter may
// return only when every task has finished *and* no worker still holds a pointer to the job.
// Both counts are kept under the pool mutex, and the worker that completes a job notifies the
// job's condition variable while still holding that mutex: the submitter cannot wake, see the
// job complete and destroy it until the notification is over.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>

#include "core/log.h"
#include "core/settings.h"

namespace sccl {

struct ThreadPool::Job {
  void (*task)(void*, size_t);
  void* context;
  size_t ntasks;
  std::atomic<size_t> next_task{0};  // claimed without the lock
  size_t finished_tasks = 0;         // guarded by mutex_
  int helpers_inside = 0;            // workers holding a pointer to the job; guarded by mutex_
  std::condition_variable completed;

  bool complete() const { return finished_tasks == ntasks && helpers_inside == 0; }
};

ThreadPool::ThreadPool(int total_threads) {
  int nworkers = std::max(total_threads, 1) - 1;
  workers_.reserve(nworkers);
  for (int i = 0; i < nworkers; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

size_t ThreadPool::runClaimedTasks(Job& job) {
  size_t ran = 0;
  for (;;) {
    size_t index = job.next_task.fetch_add(1, std::memory_order_relaxed);
    if (index >= job.ntasks) return ran;
    job.task(job.context, index);
    ++ran;
  }
}

void ThreadPool::run(size_t ntasks, void (*task)(void*, size_t), void* context) {
  if (ntasks == 0) return;
  if (workers_.empty() || ntasks == 1) {
    for (size_t i = 0; i < ntasks; ++i) task(context, i);
    return;
  }
  Job job;
  job.task = task;
  job.context = context;
  job.ntasks = ntasks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(&job);
  }
  if (ntasks - 1 >= workers_.size()) {
    work_available_.notify_all();
  } else {
    for (size_t i = 0; i + 1 < ntasks; ++i) work_available_.notify_one();
  }
  size_t ran_here = runClaimedTasks(job);

  std::unique_lock<std::mutex> lock(mutex_);
  auto queued = std::find(queue_.begin(), queue_.end(), &job);
  if (queued != queue_.end()) queue_.erase(queued);
  job.finished_tasks += ran_here;
  job.completed.wait(lock, [&] { return job.complete(); });
}

void ThreadPool::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_available_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job* job = queue_.front();
    if (job->next_task.load(std::memory_order_relaxed) >= job->ntasks) {
      queue_.pop_front();  // fully claimed: nothing left for anyone to pick up
      continue;
    }
    ++job->helpers_inside;
    lock.unlock();
    size_t ran = runClaimedTasks(*job);
    lock.lock();
    job->finished_tasks += ran;
    --job->helpers_inside;
    if (job->complete()) job->completed.notify_one();  // under the lock, see the file comment
  }
}

namespace {

int poolThreadCount() {
  int64_t configured = paramCpuThreads();
  if (configured > 0) return static_cast<int>(std::min<int64_t>(configured, 1024));
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

std::atomic<int>& partsOverride() {
  static std::atomic<int> parts{0};
  return parts;
}

}  // namespace

ThreadPool& cpuThreadPool() {
  static ThreadPool pool([] {
    int threads = poolThreadCount();
    SCCL_INFO(LogSubsys::Kernel, "CPU kernel pool: %d threads", threads);
    return threads;
  }());
  return pool;
}

size_t kernelPartCount(size_t count, size_t min_part_elements) {
  int forced = partsOverride().load(std::memory_order_relaxed);
  if (forced > 0) return std::max<size_t>(1, std::min<size_t>(forced, count));
  if (count < 2 * min_part_elements) return 1;
  size_t by_size = count / min_part_elements;
  return std::min<size_t>(by_size, cpuThreadPool().concurrency());
}

int setKernelPartsForTesting(int parts) {
  return partsOverride().exchange(std::max(parts, 0), std::memory_order_relaxed);
}

}  // namespace sccl
