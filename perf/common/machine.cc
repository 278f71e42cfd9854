// Machine description for perf headers.
#include "machine.h"

#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {
namespace {

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string vectorFeatures() {
  std::string features;
  auto add = [&](bool present, const char* name) {
    if (present) features += features.empty() ? name : std::string(" ") + name;
  };
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("f16c"), "f16c");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512vl"), "avx512vl");
  return features.empty() ? "none beyond sse2" : features;
}

std::string hostName() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "unknown";
}

}  // namespace

int kernelThreads(const PerfOptions& options) {
  if (options.threads > 0) return options.threads;
  const char* configured = std::getenv("SCCL_CPU_THREADS");
  if (configured != nullptr && std::atoi(configured) > 0) return std::atoi(configured);
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

std::string expectedKernelIsa() {
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
              __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  int best = avx512 ? 2 : avx2 ? 1 : 0;
  const char* cap_text = std::getenv("SCCL_CPU_ISA");
  int cap = 2;
  if (cap_text != nullptr && strcasecmp(cap_text, "scalar") == 0) cap = 0;
  if (cap_text != nullptr && strcasecmp(cap_text, "avx2") == 0) cap = 1;
  const char* names[] = {"scalar", "avx2", "avx512"};
  return names[std::min(best, cap)];
}

KeyValues machineDescription(const PerfOptions& options) {
  int version = 0;
  scclGetVersion(&version);
  const char* isa_cap = std::getenv("SCCL_CPU_ISA");
  return {
      {"host", hostName()},
      {"cpu", cpuModel()},
      {"logical cpus", std::to_string(std::thread::hardware_concurrency())},
      {"vector features", vectorFeatures()},
      {"kernel threads", std::to_string(kernelThreads(options))},
      {"kernel isa", expectedKernelIsa() + (isa_cap ? std::string(" (SCCL_CPU_ISA=") + isa_cap + ")"
                                                    : std::string(" (SCCL_CPU_ISA unset)"))},
      {"sparsecoll version", std::to_string(version)},
  };
}

}  // namespace sccl_perf
