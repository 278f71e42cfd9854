// select_perf -g 1: scclPartitionedSelect on GPU buffers, timed with CUDA events on a stream of
// its own, each call checked against the CPU selection of the same data bit for bit.
#pragma once

#include <cstddef>
#include <vector>

#include "common/options.h"

namespace sccl_perf {

struct DeviceSelectCase {
  size_t count, k;
  double density, threshold;
};

// Returns the exit code: 0; 1 (a wrong entry or a failed call); 77 without a usable device.
int runDeviceSelect(const PerfOptions& options, const void* host_x, size_t max_count,
                    const std::vector<DeviceSelectCase>& cases);

}  // namespace sccl_perf
