// The predicted time of one scclSparseAllreduce call: its collectives (tuning/wire_plan.h) priced
// by the link model (tuning/link_model.h), plus the local work, priced per element of the vector
// at the call's density (what a one-rank call costs: every pass over the gradient, the selection
// and the writes, without communication; measured by tuning/compute_calibration.h).
//
//   T = sum over the plan's collectives of collectiveSeconds (x ranks_per_machine where the
//       transport's work shares the cores: LocalWork::transport_shares_cores)
//     + seconds_per_element * count * ranks_per_machine
//
// ranks_per_machine: ranks that share the cores and memory of the machine the local work was
// calibrated on (the calibration gives its one rank all of them; r ranks each get 1/r).
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

struct LocalWork {
  double seconds_per_element = 0;  // tuning/compute_calibration.h, one rank alone
  int ranks_per_machine = 1;
  // true: the transport's own work (a kernel TCP stack, copies, waking the receiver) runs on the
  // same shared cores, so the communication is charged ranks_per_machine times too. For links
  // given at their nominal rate while processes share a machine (the emulated cluster); a link
  // probed under that sharing (auto's) has it in its rate already.
  bool transport_shares_cores = false;
};

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, const LocalWork& local);

}  // namespace sccl
