// The default for transports without one-sided communication.
#include "core/error.h"
#include "transports/transport.h"

namespace sccl {

scclResult_t Transport::createWindow(size_t /*bytes*/, std::unique_ptr<Window>* /*out*/) {
  return fail(scclInvalidUsage, "transport '%s' has no one-sided windows", name());
}

}  // namespace sccl
