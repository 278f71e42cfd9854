#include "transports/local/local_job.h"

#include <cstring>

#include "core/error.h"

namespace sccl {

LocalJob::LocalJob(int nranks)
    : nranks_(nranks),
      posted_(static_cast<size_t>(nranks)),
      arrivals_{std::vector<Arrival>(static_cast<size_t>(nranks)),
                std::vector<Arrival>(static_cast<size_t>(nranks))} {}

scclResult_t LocalJob::brokenError(const char* what) const {
  return fail(scclRemoteError, "in-process %s: the communicator was broken by another rank (%s)",
              what, broken_reason_);
}

scclResult_t LocalJob::barrier(int rank, std::chrono::steady_clock::time_point deadline,
                               const char* what) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) return brokenError(what);
  uint64_t my_generation = generation_;
  if (++arrived_ == nranks_) {
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
    return scclSuccess;
  }
  bool released =
      changed_.wait_until(lock, deadline, [&] { return generation_ != my_generation || broken_; });
  if (generation_ != my_generation) return scclSuccess;
  if (broken_) return brokenError(what);
  if (!released) {
    broken_ = true;
    broken_reason_ = "a rank timed out waiting for the others";
    changed_.notify_all();
    return fail(scclTimeout, "in-process %s: rank %d waited past its deadline for %d other rank(s)",
                what, rank, nranks_ - arrived_);
  }
  return scclSuccess;
}

scclResult_t LocalJob::pushMessage(int src, int dst, int tag, const void* buf, size_t bytes) {
  std::vector<std::byte> message(bytes);
  if (bytes > 0) std::memcpy(message.data(), buf, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) return brokenError("send");
  mailboxes_[{src, dst, tag}].push_back(std::move(message));
  changed_.notify_all();
  return scclSuccess;
}

scclResult_t LocalJob::popMessage(int src, int dst, int tag, void* buf, size_t bytes,
                                  std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto& queue = mailboxes_[{src, dst, tag}];
  changed_.wait_until(lock, deadline, [&] { return !queue.empty() || broken_; });
  if (!queue.empty()) {
    std::vector<std::byte> message = std::move(queue.front());
    queue.pop_front();
    if (message.size() != bytes) {
      return fail(scclInvalidUsage, "recv of %zu bytes from rank %d (tag %d) matched a send of %zu",
                  bytes, src, tag, message.size());
    }
    if (bytes > 0) std::memcpy(buf, message.data(), bytes);
    return scclSuccess;
  }
  if (broken_) return brokenError("recv");
  return fail(scclTimeout, "in-process recv: no message from rank %d (tag %d) before the deadline",
              src, tag);
}

void LocalJob::markBroken(const char* reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!broken_) {
    broken_ = true;
    broken_reason_ = reason;
  }
  changed_.notify_all();
}

scclResult_t LocalJob::health() {
  std::lock_guard<std::mutex> lock(mutex_);
  return broken_ ? brokenError("communicator") : scclSuccess;
}

}  // namespace sccl
