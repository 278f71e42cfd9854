// Command-line options shared by every perf binary, in the manner of nccl-tests: sizes (-b/-e
// with -f or -i), dtype, iterations, warm-up, check, JSON output, timeout, densities and threads. A
// binary may add its own flags (ExtraFlag) without touching the common ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {

struct PerfOptions {
  size_t min_size = 32u << 20;                    // -b
  size_t max_size = 32u << 20;                    // -e
  double step_factor = 0;                         // -f (multiplicative step; 0: use step_size)
  size_t step_size = 1u << 20;                    // -i
  bool sizes_are_elements = false;                // -u elements|bytes
  scclDataType_t dtype = scclFloat32;             // -d
  int iters = 20;                                 // -n
  int warmup = 2;                                 // -w
  int check = 1;                                  // -c
  std::string json_path;                          // -J
  std::vector<double> densities = {0.001, 0.01};  // -D
  int threads = 0;        // -t (0: the library's default; sets SCCL_CPU_THREADS otherwise)
  uint64_t seed = 12345;  // -s
  // -T: seconds. The watchdog (common/watchdog.h) ends the run when no measurement starts for
  // this long, and communicating binaries make it the deadline of every wait. 0: no watchdog,
  // the library's deadline (SCCL_TIMEOUT_MS).
  int timeout_s = 0;
  // -g 1: buffers in GPU memory, timed with CUDA events (binaries that support it; a build
  // without the CUDA kernels refuses it). (-G is estimator_perf's own flag.)
  int device = 0;
};

// A flag of one binary: `letter` takes an argument passed to `set`, which returns false if the
// argument is invalid.
struct ExtraFlag {
  char letter;
  const char* help;
  std::function<bool(const char*)> set;
};

// Parses argv into *options (which holds the binary's defaults). On -h or an error prints usage and
// returns false (exit_code tells 0 for -h, 2 for a bad command line).
bool parseOptions(int argc, char** argv, const char* description,
                  const std::vector<ExtraFlag>& extra, PerfOptions* options, int* exit_code);

// Element counts to run, from the size range and step (bytes are divided by the element size).
std::vector<size_t> elementCounts(const PerfOptions& options);

// A comma-separated list of numbers, each in (above, at_most]; false if any is not (or the list is
// empty).
bool parseNumberList(const char* text, double above, double at_most, std::vector<double>* out);

// "26000000", "64M" (binary suffixes K, M, G as in nccl-tests) -> value; false if malformed.
bool parseSize(const char* text, size_t* value);

const char* dtypeName(scclDataType_t dtype);
size_t dtypeSize(scclDataType_t dtype);

}  // namespace sccl_perf
