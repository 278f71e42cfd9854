// The cyclic assignment of partitions to ranks shared by MiCRO and ExDyna, compiled for the host
// and the device: the stream-ordered sync_free call computes each call's ranges on the GPU from
// its call counter (cuda/kernels/sync_free_stream_ordered.cu), so both must agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/host_device.h"

namespace sccl {

// Partition p of the cyclic assignment: rank r takes partition (t % n + r) % n at iteration t, so
// every rank visits every partition once per n iterations.
SCCL_HOST_DEVICE inline size_t cyclicPartition(int rank, uint64_t iteration, int nranks) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  return static_cast<size_t>((iteration % n + static_cast<uint64_t>(rank)) % n);
}

}  // namespace sccl
