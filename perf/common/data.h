// Seeded input data: element i of a buffer is a function of (seed, i) only, so any process or
// thread can regenerate any element, and results can be verified exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"
#include "team.h"

namespace sccl_perf {

// Laplace(0, 1) sample for (seed, index): gradient-like, heavy-tailed, never NaN or infinite.
double laplaceValue(uint64_t seed, uint64_t index);

// buf[i] = laplaceValue(seed, first_index + i) rounded to dtype, for i < count, on the team.
void fillLaplace(ThreadTeam& team, void* buf, scclDataType_t dtype, size_t count, uint64_t seed,
                 uint64_t first_index = 0);

// Element i of a floating-point buffer as a double (exact).
double loadAsDouble(const void* buf, scclDataType_t dtype, size_t i);

}  // namespace sccl_perf
