// Uses library internals (links sparsecoll_objects): the CPU kernels and their instruction sets.
// accumulate_perf: the CPU accumulate kernel (acc = residual + widen(grad), the first pass of
// every error-feedback call) on each instruction set this processor has, in GB/s of the three
// streams it moves (read residual, read gradient, write acc), so that a change to its loops (the
// fused non-finite count, the canonical NaN blend of docs/kernels.md) can be checked against
// memory bandwidth. The ISAs are timed round-robin (timeInterleaved), so a burst of load on a
// shared machine slows all of them rather than whichever ran during it. Uses the internal kernel
// interface (links the library's objects) to force each ISA.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/timing.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace {

using namespace sccl_perf;

struct Inputs {
  std::vector<unsigned char> residual, grad, acc;
};

// Finite values (no NaN: the timing must not depend on how many lanes the blend replaces); the
// output buffer is written once so that its pages exist before timing.
Inputs makeInputs(scclDataType_t acc_dtype, scclDataType_t grad_dtype, size_t count,
                  uint64_t seed) {
  Inputs in;
  const size_t acc_width = dtypeSize(acc_dtype), grad_width = dtypeSize(grad_dtype);
  in.residual.resize(count * acc_width);
  in.grad.resize(count * grad_width);
  in.acc.assign(count * acc_width, 0);
  for (size_t i = 0; i < count; ++i) {
    const double v = double((i * 2654435761u + seed) % 2000) * 1e-3 - 1.0;
    if (acc_width == 8) {
      std::memcpy(&in.residual[8 * i], &v, 8);
      std::memcpy(&in.grad[8 * i], &v, 8);
      continue;
    }
    const float f = float(v);
    std::memcpy(&in.residual[4 * i], &f, 4);
    if (grad_width == 4) {
      std::memcpy(&in.grad[4 * i], &f, 4);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      const uint16_t top = uint16_t(bits >> 16);  // bf16 of f; also a finite float16 pattern
      std::memcpy(&in.grad[2 * i], &top, 2);
    }
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = options.max_size = 26000000;  // elements: the target gradient size
  options.sizes_are_elements = true;
  options.iters = 15;
  int exit_code = 0;
  if (!parseOptions(argc, argv, "CPU accumulate (residual + gradient) per instruction set", {},
                    &options, &exit_code)) {
    return exit_code;
  }
  const scclDataType_t grad_dtype = options.dtype;
  const scclDataType_t acc_dtype = grad_dtype == scclFloat64 ? scclFloat64 : scclFloat32;
  std::vector<sccl::CpuIsa> isas;
  for (sccl::CpuIsa isa : {sccl::CpuIsa::Avx512, sccl::CpuIsa::Avx2, sccl::CpuIsa::Scalar}) {
    if (sccl::cpuIsaSupported(isa)) isas.push_back(isa);
  }
  std::printf("# accumulate_perf: acc = residual + widen(grad), out of place, %s gradient\n",
              dtypeName(grad_dtype));
  printKeyValues(stdout, machineDescription(options));
  std::printf(
      "# GB/s over residual + gradient + acc bytes | times: median (min) of %d, ISAs "
      "interleaved\n",
      options.iters);
  ResultTable table({{"count", "count", 12, -1},
                     {"isa", "isa", 8, 0},
                     {"median(ms)", "median_ms", 11, 3},
                     {"min(ms)", "min_ms", 9, 3},
                     {"GB/s", "gbps", 7, 2}});
  table.printHeader(stdout);
  const sccl::KernelBackend& kernels = sccl::cpuKernels();
  for (size_t count : elementCounts(options)) {
    Inputs in = makeInputs(acc_dtype, grad_dtype, count, options.seed);
    const double bytes = double(count) * double(2 * dtypeSize(acc_dtype) + dtypeSize(grad_dtype));
    std::vector<std::vector<double>> samples(isas.size());
    for (int round = 0; round < options.warmup + options.iters; ++round) {
      for (size_t k = 0; k < isas.size(); ++k) {
        sccl::setCpuIsaForTesting(isas[k]);
        uint64_t nonfinite = 0;
        const double start = nowMicroseconds();
        if (kernels.accumulate(in.acc.data(), in.residual.data(), acc_dtype, in.grad.data(),
                               grad_dtype, count, &nonfinite, nullptr) != scclSuccess) {
          return 1;
        }
        const double elapsed = nowMicroseconds() - start;
        if (round >= options.warmup) samples[k].push_back(elapsed);
      }
    }
    for (size_t k = 0; k < isas.size(); ++k) {
      const Timing t = summarize(samples[k]);
      table.addRow({double(count), sccl::cpuIsaName(isas[k]), t.median_us / 1e3, t.min_us / 1e3,
                    gigabytesPerSecond(bytes, t.median_us)},
                   stdout);
    }
  }
  return 0;
}
