#include "transports/local/local_rendezvous.h"

#include <map>
#include <mutex>

#include "core/error.h"

namespace sccl {

scclResult_t joinLocalJob(const std::array<uint8_t, 16>& token, int nranks,
                          std::shared_ptr<LocalJob>* job) {
  static std::mutex mutex;
  static std::map<std::array<uint8_t, 16>, std::weak_ptr<LocalJob>> jobs;
  std::lock_guard<std::mutex> lock(mutex);
  // Forget jobs whose ranks are all gone, so the map does not grow with every communicator.
  for (auto it = jobs.begin(); it != jobs.end();) {
    it = it->second.expired() ? jobs.erase(it) : std::next(it);
  }
  std::shared_ptr<LocalJob> existing = jobs[token].lock();
  if (existing == nullptr) {
    existing = std::make_shared<LocalJob>(nranks);
    jobs[token] = existing;
  } else if (existing->nranks() != nranks) {
    // The bootstrap already checked nranks; this guards against reuse of one id by two jobs.
    return fail(scclInvalidUsage, "unique id already used by an in-process job of %d ranks, not %d",
                existing->nranks(), nranks);
  }
  *job = std::move(existing);
  return scclSuccess;
}

}  // namespace sccl
