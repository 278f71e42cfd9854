// Accessors of the settings declared in src/core/settings.cc (one place lists them all).
#pragma once

#include <cstdint>
#include <string>

namespace sccl {
// The longest timeout a communicator or the bootstrap accepts, from SCCL_TIMEOUT_MS,
// SCCL_BOOTSTRAP_TIMEOUT_MS or the config: INT_MAX ms (about 24.8 days), the bound the int field
// scclConfig_t::timeoutMs has anyway. Longer values are scclInvalidArgument at creation; a
// deadline now + timeout then never overflows steady_clock.
constexpr int64_t kMaxTimeoutMs = 2147483647;

const std::string& paramDebug();
const std::string& paramDebugSubsys();
const std::string& paramDebugFile();
int64_t paramTimeoutMs();
const std::string& paramTransport();
const std::string& paramSocketIfname();
int64_t paramBootstrapTimeoutMs();
int64_t paramCpuThreads();
const std::string& paramCpuIsa();
int64_t paramAutoRetune();
int64_t paramAutoRetuneTolerance();
const std::string& paramNodeId();
int64_t paramRanksPerNode();
int64_t paramLinkLatencyNs();
int64_t paramLinkRateMbits();
}  // namespace sccl
