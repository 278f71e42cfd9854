#include "sparse/run_settings.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace sccl_perf {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

}  // namespace

KeyValues runSettings(const SparseOptions& o, const Rank& rank, const std::string& transport,
                      const std::string& device) {
  std::vector<std::string> densities;
  for (double d : o.common.densities) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", d);
    densities.push_back(text);
  }
  const std::string how = rank.in_process ? " (threads of this process)" : " (processes)";
  KeyValues settings = {
      {"transport", transport},
      {"ranks", std::to_string(rank.nranks) + how},
      {"operation", std::string("scclSparseAllreduce, ") + (o.op == scclAvg ? "avg" : "sum")},
      {"algorithms", joined(o.algorithms)},
      {"densities", joined(densities)},
      {"timed calls", std::to_string(o.common.iters) +
                          " per algorithm, interleaved (round 0 in order, then shuffled)"},
      {"warm-up", "dense " + std::to_string(o.common.warmup) + " calls (-w); sparse at least " +
                      std::to_string(o.sparse_warmup) + " (-W), then until k' settles, at most " +
                      std::to_string(std::max(o.sparse_warmup, o.warmup_limit)) + " (-L)"},
      {"sparse config", o.config_path.empty() ? "SCCL_SPARSE_CONFIG_INITIALIZER" : o.config_path},
      {"seed", std::to_string(o.common.seed)},
      {"inputs",
       o.traces ? "trace: " + o.traces->dir + ", " + std::to_string(o.traces->workers()) +
                      " workers x " + std::to_string(o.traces->files()) +
                      " iterations; rank r replays worker r mod workers, call t its file t mod "
                      "files; s2 selects blocks by norm"
       : o.embedding
           ? "embedding: rows of " + std::to_string(o.row_width) +
                 " elements, d * rows Zipf(1.05) draws per rank and call, touched rows b * "
                 "Laplace(0,1), 8 gradients per rank cycled; s2 marks non-zero rows, "
                 "hard_threshold sends every non-zero"
           : std::string("g[r][t][i] = b * Laplace(0,1) from (seed, r, t, i), b = 1/(2 sqrt(k) "
                         "ln(1/d))")},
      {"check",
       o.common.check ? "first call of fresh sparsifiers, bitwise (see the source)" : "off (-c 0)"},
  };
  if (!device.empty()) {
    settings.push_back({"buffers", "GPU memory: rank 0 on " + device +
                                       ", rank r on GPU r mod the GPUs its process sees"});
    settings.push_back({"timing",
                        "CUDA events on each rank's non-blocking stream around the call; "
                        "the gradient's copy to the GPU is not timed; dense is "
                        "scclAllReduce of the device buffers"});
    if (!o.skipped_on_device.empty())
      settings.push_back({"not run (no device path)", joined(o.skipped_on_device)});
    if (std::any_of(o.algorithms.begin(), o.algorithms.end(), isGraphReplayRow)) {
      settings.push_back(
          {"graph rows",
           "<preset>:graph = the preset with streamOrdered = 1; its first call eager (allocates), "
           "the second captured in a CUDA graph (capture untimed), every timed call a "
           "cudaGraphLaunch between the events; the asynchronous error checked after each call"});
    }
  }
  if (!o.skipped_on_host.empty())
    settings.push_back({"not run (graph replay needs -g 1)", joined(o.skipped_on_host)});
  return settings;
}

void printLegend(bool device) {
  std::printf(
      "# time: median over the timed calls of each rank, max over ranks | algbw: count * "
      "sizeof(type) / time (GB/s, dense-equivalent) | speedup: dense time / time, same size\n"
      "# actual: k'/count (mean) | warmup: calls before timing | sent/recv: bytes per rank per "
      "call | f(t): n * max(k_i) / k' | err: sketch decode error ||out - sum|| / ||sum|| | "
      "select/comm/other: the library's split of a call (us)\n");
  if (device) {
    std::printf(
        "# -g 1: select/comm/other '-': a stream-ordered call (the :graph rows) is only enqueued "
        "by the host, which cannot time its parts; k', bytes and f(t) are the library's, read "
        "from the device\n");
  }
}

}  // namespace sccl_perf
