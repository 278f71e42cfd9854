// The bootstrap root services (behaviour in bootstrap_root.h, frames in wire.h). One thread for
// the whole process, one poll() loop over the non-blocking sockets of every unique id's service:
// a slow or silent connection never blocks the others, and every connection has bounded buffers
// (one frame in, the queued replies out).
#include "transports/bootstrap/bootstrap_root.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/settings.h"
#include "transports/bootstrap/root_service.h"
#include "transports/bootstrap/unique_id.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

// The one root thread of the process. It exists while some service runs: the first unique id
// starts it, and it ends when its last service is done (so an idle process has no such thread).
// An unused id costs its listening socket until its rendezvous timeout, never a thread.
// Services are handed over through `pending_`; an eventfd wakes the thread's poll() for them.
class RootThread {
 public:
  static RootThread& instance() {
    // Never destroyed: the detached thread may still run while the process exits.
    static RootThread* const hub = new RootThread;
    return *hub;
  }

  scclResult_t start(std::unique_ptr<RootService> service) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_ && owner_pid_ != getpid()) forgetParentThread();
    pending_.push_back(std::move(service));
    if (running_) {
      const uint64_t one = 1;
      if (write(wake_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        // The thread still polls the new service at its next wakeup (at most its deadlines).
        SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root: cannot wake the root thread: %s",
                  strerror(errno));
      }
      return scclSuccess;
    }
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
      pending_.pop_back();
      return fail(scclSystemError, "bootstrap: cannot create the root thread's eventfd: %s",
                  strerror(errno));
    }
    try {
      std::thread([this] { run(); }).detach();
    } catch (const std::system_error& error) {
      close(wake_fd_);
      wake_fd_ = -1;
      pending_.pop_back();
      return fail(scclSystemError, "bootstrap: cannot start the root thread: %s", error.what());
    }
    running_ = true;
    owner_pid_ = getpid();
    return scclSuccess;
  }

 private:
  RootThread() {
    // A fork while the thread holds the mutex would leave it locked in the child forever.
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] { instance().mutex_.unlock(); });
  }

  // In a child forked while the thread ran: the thread did not come along, and the services
  // are the parent's (their sockets, copied into this process, are closed here only).
  void forgetParentThread() {
    pending_.clear();
    close(wake_fd_);
    wake_fd_ = -1;
    running_ = false;
  }

  void run() noexcept {
    std::vector<std::unique_ptr<RootService>> services;
    std::vector<pollfd> fds;
    std::vector<size_t> first_fd;
    for (;;) {
      int wake_fd = -1;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& service : pending_) services.push_back(std::move(service));
        pending_.clear();
        if (services.empty()) {
          close(wake_fd_);
          wake_fd_ = -1;
          running_ = false;
          return;
        }
        wake_fd = wake_fd_;
      }
      try {
        turn(services, wake_fd, &fds, &first_fd);
      } catch (const std::exception& error) {
        stopAll(services, error.what());
      } catch (...) {
        stopAll(services, "an unknown exception");
      }
    }
  }

  // One poll() over every service's sockets and the eventfd, then each service's handlers.
  void turn(std::vector<std::unique_ptr<RootService>>& services, int wake_fd,
            std::vector<pollfd>* fds, std::vector<size_t>* first_fd) {
    fds->assign(1, pollfd{wake_fd, POLLIN, 0});
    first_fd->clear();
    Clock::time_point next = Clock::time_point::max();
    for (auto& service : services) {
      first_fd->push_back(fds->size());
      service->appendPollFds(fds);
      next = std::min(next, service->nextDeadline());
    }
    int timeout_ms = -1;  // no deadline: rounds may be hours apart
    if (next != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60 * 60 * 1000));
    }
    int ready = poll(fds->data(), fds->size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      stopAll(services, strerror(errno));
      return;
    }
    if ((*fds)[0].revents != 0) {
      uint64_t count = 0;
      if (read(wake_fd, &count, sizeof(count)) < 0) count = 0;  // EAGAIN: nothing to drain
    }
    for (size_t i = 0; i < services.size(); ++i) {
      // One service's failure (out of memory in a handler) ends that job only.
      try {
        services[i]->handlePoll(&(*fds)[(*first_fd)[i]]);
      } catch (const std::exception& error) {
        SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root stopped: %s", error.what());
        services[i]->stop();
      }
    }
    std::erase_if(services, [](const auto& service) { return service->done(); });
  }

  static void stopAll(std::vector<std::unique_ptr<RootService>>& services, const char* why) {
    SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root thread: %s; stopping %zu rendezvous", why,
              services.size());
    for (auto& service : services) service->stop();
    services.clear();
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<RootService>> pending_;
  bool running_ = false;
  int wake_fd_ = -1;  // valid while running_
  pid_t owner_pid_ = 0;
};

}  // namespace

scclResult_t startBootstrapRoot(const std::string& interface_name, int64_t rendezvous_timeout_ms,
                                scclUniqueId* id) {
  SCCL_REQUIRE_ARG(id != nullptr, "bootstrap: unique id pointer is NULL");
  SCCL_REQUIRE_ARG(rendezvous_timeout_ms > 0 && rendezvous_timeout_ms <= kMaxTimeoutMs,
                   "bootstrap: the rendezvous timeout (SCCL_BOOTSTRAP_TIMEOUT_MS) must be in "
                   "[1, %lld] ms (at most about 24.8 days), got %lld",
                   static_cast<long long>(kMaxTimeoutMs),
                   static_cast<long long>(rendezvous_timeout_ms));
  SocketAddress address;
  SCCL_CHECK(findListenAddress(interface_name, &address));
  Socket listener;
  SocketAddress bound;
  SCCL_CHECK(listenOnEphemeralPort(address, &listener, &bound));
  UniqueIdContents contents;
  SCCL_CHECK(generateJobToken(&contents.token));
  SCCL_CHECK(fillAddressFields(bound, &contents));

  std::string where = bound.toString();
  try {
    auto service = std::make_unique<RootService>(std::move(listener), contents.token, where,
                                                 rendezvous_timeout_ms);
    SCCL_CHECK(RootThread::instance().start(std::move(service)));
  } catch (const std::bad_alloc&) {
    return fail(scclSystemError, "bootstrap: out of memory starting the root");
  }
  SCCL_INFO(LogSubsys::Bootstrap, "bootstrap root listening on %s (rendezvous timeout %lld ms)",
            where.c_str(), static_cast<long long>(rendezvous_timeout_ms));
  encodeUniqueId(contents, id);
  return scclSuccess;
}

}  // namespace sccl
