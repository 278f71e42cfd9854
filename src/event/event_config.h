// The EventGraD configuration as the library uses it: scclEventConfig_t checked, its JSON form,
// and a fingerprint with which ranks verify that they agree.
#pragma once

#include <cstdint>
#include <string>

#include "event/event_trigger.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

struct ResolvedEventConfig {
  TriggerConfig trigger;
  bool synchronous = true;
  bool average_differences = false;  // scclEventAverageDifferences
};

// Checks every field (scclInvalidArgument naming it).
scclResult_t resolveEventConfig(const scclEventConfig_t& config, ResolvedEventConfig* out);

scclResult_t eventConfigFromJson(const char* text, scclEventConfig_t* config);

// Digest of the config mixed into `seed`.
uint64_t eventConfigFingerprint(const ResolvedEventConfig& config, uint64_t seed);

std::string describeEventConfig(const ResolvedEventConfig& config);

}  // namespace sccl
