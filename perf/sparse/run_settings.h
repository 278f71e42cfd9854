// The text sparse_allreduce_perf prints before its table (and stores in its JSON): the run's
// settings and the legend of the columns.
#pragma once

#include <string>

#include "common/report.h"
#include "sparse/bench.h"

namespace sccl_perf {

// The run's settings as key/value lines. device: the GPU rank 0 runs on (DeviceCalls::describe),
// empty for host buffers.
KeyValues runSettings(const SparseOptions& o, const Rank& rank, const std::string& transport,
                      const std::string& device);

// What the table's columns mean (device: the -g 1 note too).
void printLegend(bool device);

}  // namespace sccl_perf
