// The two gradients a calibration alternates (tuning/compute_calibration.cc): Laplace(0, scale)
// values, as the papers' gradients are modelled (SIDCo fits them so), written in the calibrated
// dtype. The second is a permutation of the first, not a second draw: the logarithms of the draw
// cost about 35 ns per element on this project's 2-vCPU guests (4.5 of rank 0's 18-19 ms of
// calibration at 64K float32 for two draws, docs/results/cost_model.md), a permutation a tenth of
// that, and what the calibrated work depends on (the magnitudes' distribution, and that the
// residual's large entries move from call to call) is the same.
#pragma once

#include <cstdint>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// first: count values of stream `seed` in dtype (integer dtypes get the values' whole parts,
// cut to the element's bytes); second: first[(i * stride) mod count] for the stride
// permutationStride(count) gives. Both are resized to count * dataTypeSize(dtype) bytes.
void drawCalibrationGradients(uint64_t seed, scclDataType_t dtype, double scale, uint64_t count,
                              std::vector<unsigned char>* first,
                              std::vector<unsigned char>* second);

// A stride coprime with count (so that i -> i * stride mod count is a bijection) near
// 0.618 count, which scatters neighbours far apart; 1 for count <= 2.
uint64_t permutationStride(uint64_t count);

}  // namespace sccl
