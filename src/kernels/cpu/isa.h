// Run-time choice of the instruction set used by the CPU kernels. The library is compiled for
// baseline x86-64; the AVX2 and AVX-512 paths live in functions with target attributes and are
// only called when the processor has the features (and SCCL_CPU_ISA does not cap them away).
#pragma once

namespace sccl {

// Ordered from least to most capable so that a cap is a simple minimum.
enum class CpuIsa : int {
  Scalar = 0,  // baseline x86-64 (SSE2), portable C++
  Avx2 = 1,    // AVX2 + F16C
  Avx512 = 2,  // AVX-512 F, BW and VL
};

const char* cpuIsaName(CpuIsa isa);

// True when this processor can run the kernels of `isa`.
bool cpuIsaSupported(CpuIsa isa);

// The instruction set the kernels use: the best supported one, capped by SCCL_CPU_ISA (chosen on
// first use and logged at INFO), unless a test has overridden it.
CpuIsa activeCpuIsa();

// Testing hook: makes the kernels use `isa` (which must be supported) until the next call;
// returns the previous choice. Not for production code: it changes the process-wide setting.
CpuIsa setCpuIsaForTesting(CpuIsa isa);

}  // namespace sccl
