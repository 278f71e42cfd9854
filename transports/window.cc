// The defaults of the optional Transport operations: no one-sided communication, and call
// agreement as a plain all-gather of the records.
#include <vector>

#include "core/error.h"
#include "transports/transport.h"

namespace sccl {

scclResult_t Transport::createWindow(size_t /*bytes*/, std::unique_ptr<Window>* /*out*/) {
  return fail(scclInvalidUsage, "transport '%s' has no one-sided windows", name());
}

scclResult_t Transport::agree(const CallAgreement& agreement) {
  std::vector<CallRecord> all(static_cast<size_t>(nranks()));
  SCCL_CHECK(allGather(agreement.mine, all.data(), sizeof(CallRecord)));
  return agreement.check(all.data(), nranks(), agreement.context);
}

}  // namespace sccl
