// Gradients of the GPU suite's sparse all-reduce tests: support/sparse_runs.h's gradientValue
// with the first count / head_divisor entries ten times larger (so that the selection is not
// uniform over the partitions), as a function for the host run and as a vector for a device copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace sccl_gpu_test
