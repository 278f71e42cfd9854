// Loading a directory of gradient traces for sparse_allreduce_perf's -I trace:DIR.
#include "sparse/trace_inputs.h"

#include <algorithm>
#include <map>
#include <utility>

#include "support/gradient_trace.h"

namespace sccl_perf {

bool loadTraceSet(const std::string& dir, TraceSet* out, std::string* error) {
  const std::vector<std::string> paths = sccl_test::listGradientTraces(dir);
  if (paths.empty()) {
    *error = "no *.sccltrace files in '" + dir + "'";
    return false;
  }
  // worker -> iteration -> values; the map orders the iterations.
  std::map<uint32_t, std::map<uint32_t, std::vector<float>>> by_worker;
  TraceSet set;
  set.dir = dir;
  for (const std::string& path : paths) {
    sccl_test::GradientTrace trace;
    if (!sccl_test::loadGradientTrace(path, &trace, error)) return false;
    if (set.count == 0) set.count = trace.values.size();
    if (trace.values.size() != set.count || trace.values.empty()) {
      *error = path + ": " + std::to_string(trace.values.size()) + " values, the first file had " +
               std::to_string(set.count);
      return false;
    }
    const uint32_t worker = trace.worker, iteration = trace.iteration;
    if (!by_worker[worker].emplace(iteration, std::move(trace.values)).second) {
      *error = path + ": a second file for worker " + std::to_string(worker) + ", iteration " +
               std::to_string(iteration);
      return false;
    }
  }
  const std::map<uint32_t, std::vector<float>>& first = by_worker.begin()->second;
  for (auto& [worker, files] : by_worker) {
    const bool same_iterations =
        files.size() == first.size() &&
        std::equal(files.begin(), files.end(), first.begin(),
                   [](const auto& a, const auto& b) { return a.first == b.first; });
    if (worker != set.values.size() || !same_iterations) {
      *error = "worker " + std::to_string(worker) + " of '" + dir +
               "' is missing or has a different number of iterations than worker 0";
      return false;
    }
    std::vector<std::vector<float>> ordered;
    for (auto& [iteration, values] : files) ordered.push_back(std::move(values));
    set.values.push_back(std::move(ordered));
  }
  *out = std::move(set);
  return true;
}

}  // namespace sccl_perf
