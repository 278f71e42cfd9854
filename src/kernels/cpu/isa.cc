// Detects the processor's vector features once and applies the SCCL_CPU_ISA cap.
#include "kernels/cpu/isa.h"

#include <cpuid.h>

#include <atomic>
#include <strings.h>

#include "core/log.h"
#include "core/settings.h"

namespace sccl {
namespace {

CpuIsa bestSupportedIsa() {
  if (cpuIsaSupported(CpuIsa::Avx512)) return CpuIsa::Avx512;
  if (cpuIsaSupported(CpuIsa::Avx2)) return CpuIsa::Avx2;
  return CpuIsa::Scalar;
}

// An unknown SCCL_CPU_ISA value is reported and ignored rather than failing: the kernels are
// correct on every path, so a typo must not stop a training job.
CpuIsa chooseIsa() {
  CpuIsa best = bestSupportedIsa();
  const std::string& cap_text = paramCpuIsa();
  CpuIsa cap = CpuIsa::Avx512;
  if (cap_text.empty()) {
    cap = CpuIsa::Avx512;
  } else if (strcasecmp(cap_text.c_str(), "scalar") == 0) {
    cap = CpuIsa::Scalar;
  } else if (strcasecmp(cap_text.c_str(), "avx2") == 0) {
    cap = CpuIsa::Avx2;
  } else if (strcasecmp(cap_text.c_str(), "avx512") == 0) {
    cap = CpuIsa::Avx512;
  } else {
    SCCL_WARN(LogSubsys::Kernel, "SCCL_CPU_ISA=%s is not one of scalar, avx2, avx512; ignored",
              cap_text.c_str());
  }
  CpuIsa chosen = static_cast<int>(cap) < static_cast<int>(best) ? cap : best;
  SCCL_INFO(LogSubsys::Kernel, "CPU kernels use %s (processor supports %s, SCCL_CPU_ISA=%s)",
            cpuIsaName(chosen), cpuIsaName(best), cap_text.empty() ? "unset" : cap_text.c_str());
  return chosen;
}

// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c", and
// the fuzz and sanitizer builds use clang.
bool processorHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

std::atomic<int>& isaOverride() {
  static std::atomic<int> value{-1};  // -1: no override
  return value;
}

}  // namespace

const char* cpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Scalar: return "scalar";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
  }
  return "invalid";
}

bool cpuIsaSupported(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Scalar: return true;
    case CpuIsa::Avx2:
      return __builtin_cpu_supports("avx2") && processorHasF16c() && __builtin_cpu_supports("fma");
    case CpuIsa::Avx512:
      return cpuIsaSupported(CpuIsa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  }
  return false;
}

CpuIsa activeCpuIsa() {
  int forced = isaOverride().load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<CpuIsa>(forced);
  static const CpuIsa chosen = chooseIsa();
  return chosen;
}

CpuIsa setCpuIsaForTesting(CpuIsa isa) {
  CpuIsa previous = activeCpuIsa();
  isaOverride().store(static_cast<int>(isa), std::memory_order_relaxed);
  return previous;
}

}  // namespace sccl
