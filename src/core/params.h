// Accessors of the settings declared in src/core/params.cc (one place lists them all).
#pragma once

#include <cstdint>
#include <string>

namespace sccl {
const std::string& paramDebug();
const std::string& paramDebugSubsys();
const std::string& paramDebugFile();
int64_t paramTimeoutMs();
const std::string& paramTransport();
const std::string& paramSocketIfname();
int64_t paramBootstrapTimeoutMs();
int64_t paramCpuThreads();
const std::string& paramCpuIsa();
}  // namespace sccl
