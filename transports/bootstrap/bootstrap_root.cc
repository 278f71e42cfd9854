// The bootstrap root service (behaviour in bootstrap_root.h, frames in wire.h). One thread, one
// poll() loop over non-blocking sockets: a slow or silent connection never blocks the others,
// and every connection has bounded buffers (one frame in, the queued replies out).
#include "transports/bootstrap/bootstrap_root.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "transports/bootstrap/root_service.h"
#include "transports/bootstrap/unique_id.h"

namespace sccl {
namespace {

void runRootService(std::unique_ptr<RootService> service) noexcept {
  // Nothing may escape a thread function: an exception here would terminate the process.
  try {
    service->run();
  } catch (const std::exception& error) {
    SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root stopped: %s", error.what());
  } catch (...) {
    SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root stopped by an unknown exception");
  }
}

}  // namespace

scclResult_t startBootstrapRoot(const std::string& interface_name, int64_t rendezvous_timeout_ms,
                                scclUniqueId* id) {
  SCCL_REQUIRE_ARG(id != nullptr, "bootstrap: unique id pointer is NULL");
  SCCL_REQUIRE_ARG(rendezvous_timeout_ms > 0,
                   "bootstrap: the rendezvous timeout (SCCL_BOOTSTRAP_TIMEOUT_MS) must be "
                   "positive, got %lld",
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
    std::thread(runRootService, std::move(service)).detach();
  } catch (const std::system_error& error) {
    return fail(scclSystemError, "bootstrap: cannot start the root thread: %s", error.what());
  } catch (const std::bad_alloc&) {
    return fail(scclSystemError, "bootstrap: out of memory starting the root");
  }
  SCCL_INFO(LogSubsys::Bootstrap, "bootstrap root listening on %s (rendezvous timeout %lld ms)",
            where.c_str(), static_cast<long long>(rendezvous_timeout_ms));
  encodeUniqueId(contents, id);
  return scclSuccess;
}

}  // namespace sccl
