// Seeded input data: element i of a buffer is a function of (seed, i) only, so any process or
// thread can regenerate any element, and results can be verified exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"
#include "team.h"

namespace sccl_perf {

// 64 random bits for (seed, index): splitmix64 of the two, the same on every machine.
uint64_t splitmix(uint64_t seed, uint64_t index);

// Laplace(0, 1) sample for (seed, index): gradient-like, heavy-tailed, never NaN or infinite.
double laplaceValue(uint64_t seed, uint64_t index);

// buf[i] = scale * laplaceValue(seed, first_index + i) rounded to dtype, for i < count, on the
// team. scale 1 gives the plain Laplace(0, 1) buffer select_perf uses.
void fillLaplace(ThreadTeam& team, void* buf, scclDataType_t dtype, size_t count, uint64_t seed,
                 uint64_t first_index = 0, double scale = 1.0);

// buf[i] = value rounded to dtype (through float for the 16-bit types, as fillLaplace), so a
// checker can rebuild any input element, or an expected output, bit for bit.
void storeValue(void* buf, scclDataType_t dtype, size_t i, double value);

// Element i of a floating-point buffer as a double (exact).
double loadAsDouble(const void* buf, scclDataType_t dtype, size_t i);

}  // namespace sccl_perf
