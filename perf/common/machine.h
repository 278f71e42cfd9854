// What a perf result was measured on: processor, threads, vector instruction sets (read here
// with cpuid, independently of the library) and the library version.
#pragma once

#include <string>

#include "options.h"
#include "report.h"

namespace sccl_perf {

// Threads the CPU kernels use: -t, else SCCL_CPU_THREADS, else one per hardware thread (the
// library's own rule, so baselines can use the same number).
int kernelThreads(const PerfOptions& options);

// The instruction set the CPU kernels pick by the library's documented rule: the best of
// avx512 (F+BW+VL), avx2 (+F16C, FMA) and scalar that this processor has, capped by
// SCCL_CPU_ISA. `sccl_info` prints the library's own answer.
std::string expectedKernelIsa();

// "model name" of /proc/cpuinfo, logical CPUs, features, threads, ISA, library version.
KeyValues machineDescription(const PerfOptions& options);

}  // namespace sccl_perf
