// libFuzzer harness: the JSON decoders of the public API, scclSparseConfigFromJson and
// scclEventConfigFromJson, on arbitrary text. Both must return a documented code (success,
// or scclInvalidArgument with a message) and never crash, leak or read past the text. A config
// that parses is then validated the way scclSparsifierCreate does (resolveSparseConfig), so that
// values that are syntactically fine but out of range reach the checks too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sparsifier/sparse_config.h"
#include "event/event_config.h"
#include "sparsecoll/sparsecoll.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // NUL-terminated copy
  scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
  scclResult_t result = scclSparseConfigFromJson(text.c_str(), &sparse);
  if (result != scclSuccess && result != scclInvalidArgument) std::abort();
  if (result == scclSuccess) {
    sccl::ResolvedSparseConfig resolved;
    scclResult_t checked = sccl::resolveSparseConfig(sparse, &resolved);
    if (checked != scclSuccess && checked != scclInvalidArgument) std::abort();
    if (checked == scclSuccess) (void)sccl::describeSparseConfig(resolved);
  }
  scclEventConfig_t event = SCCL_EVENT_CONFIG_INITIALIZER;
  result = scclEventConfigFromJson(text.c_str(), &event);
  if (result != scclSuccess && result != scclInvalidArgument) std::abort();
  if (result == scclSuccess) {
    sccl::ResolvedEventConfig resolved;
    scclResult_t checked = sccl::resolveEventConfig(event, &resolved);
    if (checked != scclSuccess && checked != scclInvalidArgument) std::abort();
  }
  return 0;
}
