// The predicted time of one scclSparseAllreduce call: its collectives (tuning/wire_plan.h) priced
// by the link model (tuning/link_model.h), plus the local work, priced per element of the vector
// at the call's density (what a one-rank call costs: every pass over the gradient, the selection
// and the writes, without communication; measured by tuning/compute_calibration.h).
//
//   T = sum over the plan's collectives of collectiveSeconds + compute_s_per_element * count
//
// docs/cost_model.md: the formulas, what is measured, where the model is wrong.
#pragma once

#include <cstddef>

#include "tuning/link_model.h"
#include "tuning/wire_plan.h"

namespace sccl {

struct CallPrediction {
  double seconds = 0;          // comm_seconds + compute_seconds
  double comm_seconds = 0;
  double compute_seconds = 0;
  WireBytes bytes;             // this rank's, not the broadcast root's
  size_t collectives = 0;      // messages per rank and call = their latency terms
};

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, double compute_s_per_element);

}  // namespace sccl
