// Real gradients for sparse_allreduce_perf (-I trace:DIR): the gradient trace files written by
// scripts/gradient_traces.py and scripts/lm_gradient_traces.py (tests/data/traces*, format in
// docs/gradient_traces.md), loaded once per process with the checked reader of the tests.
//
// Rank r feeds worker (r mod workers)'s gradients, call t the file t mod files of that worker in
// iteration order, so 4 ranks replay what 4 data-parallel workers handed to the all-reduce at the
// same steps, overlap between workers included. Every worker must have the same iterations and
// every file the same count; the sizes of the run are the traces' count (-b/-e are ignored).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sccl_perf {

struct TraceSet {
  std::string dir;
  size_t count = 0;
  // values[worker][file][i], files in iteration order.
  std::vector<std::vector<std::vector<float>>> values;

  size_t workers() const { return values.size(); }
  size_t files() const { return values.empty() ? 0 : values.front().size(); }
  const std::vector<float>& of(int rank, size_t call) const {
    const std::vector<std::vector<float>>& own = values[size_t(rank) % workers()];
    return own[call % own.size()];
  }
};

// Loads every *.sccltrace of dir. False with a message when the directory holds none, a file
// does not pass the reader's checks, or the workers' files do not line up.
bool loadTraceSet(const std::string& dir, TraceSet* out, std::string* error);

}  // namespace sccl_perf
