// The local work of one call, measured: a config's scclSparseAllreduce on a communicator of one
// in-process rank (no communication; every pass over the gradient, the estimator, the selection,
// the writes of the output and the residual), in seconds per element of the vector. The cost
// model (tuning/cost_model.h) multiplies it by the count it predicts for.
//
// Inputs: Laplace values, two gradients alternated (the second a permutation of the first,
// tuning/calibration_gradients.h; the residual carries what was not sent, as in training);
// warm-up calls until the estimator selects within 10 % of k twice in a row (at most 40), then
// `calls` timed calls, the median. Cached
// per process by (algorithm and every other setting that changes the work, dtype, count), so a
// calibration runs once per process.
#pragma once

#include <cstdint>

#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"

namespace sccl {

// *seconds_per_element: median time of `calls` calls divided by count. Fails (with the library's
// error) if the config cannot run on count elements of dtype.
scclResult_t calibrateCompute(const scclSparseConfig_t& config, scclDataType_t dtype,
                              uint64_t count, int calls, double* seconds_per_element);

// The same for n configs at one dtype and count, which share one communicator and the gradients
// (drawn again only where a config's scale differs; configs that select nothing, dense, run last
// on whatever was drawn, since their work does not depend on the values). Cheaper than n
// calibrateCompute calls: auto calibrates its candidates so.
// results[i] is config i's outcome (seconds_per_element[i] is valid where it is scclSuccess);
// the function itself fails only on invalid arguments.
scclResult_t calibrateComputeBatch(const scclSparseConfig_t* configs, size_t n,
                                   scclDataType_t dtype, uint64_t count, int calls,
                                   double* seconds_per_element, scclResult_t* results);
// The same for configs resolved already ("auto" resolves each candidate once); a config with an
// empty algorithm is one that did not resolve: scclInvalidArgument in results, not measured.
scclResult_t calibrateResolvedBatch(const ResolvedSparseConfig* configs, size_t n,
                                    scclDataType_t dtype, uint64_t count, int calls,
                                    double* seconds_per_element, scclResult_t* results);

}  // namespace sccl
