// Gradients of the GPU suite's sparse all-reduce tests, and their comparison with the host run:
// support/sparse_runs.h's gradientValue with the first count / head_divisor entries ten times
// larger (so that the selection is not uniform over the partitions), as a function for the host run
// and as a vector for a device copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bit_mismatch.h"
#include "device_buffer.h"
#include "sparsecoll/sparsecoll.h"
#include "support/sparse_runs.h"

namespace sccl_gpu_test {

struct HeadHeavyGradient {
  uint32_t seed;
  size_t count;
  size_t head_divisor;

  float operator()(int r, uint64_t t, size_t i) const {
    return sccl_test::gradientValue(seed, r, t, i) * (i < count / head_divisor ? 10.0f : 1.0f);
  }

  std::vector<float> vector(int r, uint64_t t) const {
    std::vector<float> grad(count);
    for (size_t i = 0; i < count; ++i) grad[i] = (*this)(r, t, i);
    return grad;
  }
};

inline std::string lastError(scclComm_t comm) {
  return scclGetLastError(comm);
}

// After a device call and its stream: "" when recvbuf (read back) and the sparsifier's counts
// equal the host run's call `want` bit for bit, else what differs (for the output: how many
// elements and the first few, bit_mismatch.h); *stats gets the statistics.
inline std::string differenceFromHost(const DeviceBuffer<float>& recvbuf, scclSparsifier_t sp,
                                      const sccl_test::RankIteration& want,
                                      scclSparseStats_t* stats) {
  const std::string output =
      bitMismatch("output against the host run", want.output, recvbuf.read());
  if (!output.empty()) return output;
  *stats = scclSparseStats_t{};
  stats->size = sizeof(*stats);
  if (scclSparsifierGetStats(sp, stats) != scclSuccess) return "scclSparsifierGetStats failed";
  if (stats->kGlobal != want.stats.kGlobal || stats->kLocal != want.stats.kLocal)
    return "counts differ from the host run";
  return "";
}

}  // namespace sccl_gpu_test
