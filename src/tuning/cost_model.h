// The predicted time of one scclSparseAllreduce call: its collectives (tuning/wire_plan.h) priced
// by the link model (tuning/link_model.h) and by the transport's work on the host, plus the local
// work: per element of the vector (what a one-rank call costs: every pass over the gradient, the
// selection and the writes, without communication; measured by tuning/compute_calibration.h) and
// per entry received or aggregated (tuning/wire_plan.h planAggregatedEntries: what grows with the
// rank count and a one-rank call never does).
//
//   T = max(wire, s h B) + s w M                                      communication
//     + r seconds_per_element count                                   local work per element
//     + r seconds_per_entry E                                         local work per entry
//
//   wire = sum over the plan's collectives of collectiveCost(c).seconds (alpha and bytes)
//   B    = bytes this rank sends and receives, M = messages it sends (the cheapest algorithms')
//   E    = planAggregatedEntries, r = ranks_per_machine,
//   s    = r where the transport's work shares the ranks' cores (transport_shares_cores), else 1
//
// h (transport_seconds_per_byte) is the CPU time the transport spends per byte moved (copies, a
// kernel TCP stack, the reduction's arithmetic), w (transport_seconds_per_message) per message
// (a system call, waking a receiver that shares a core). Both 0 unless given: a probed link (auto's)
// has them in its measured rates already.
//
// docs/cost_model.md: the formulas, what is measured, where the model is wrong.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tuning/link_model.h"
#include "tuning/wire_plan.h"

namespace sccl {

struct CallPrediction {
  double seconds = 0;            // comm_seconds + compute_seconds + aggregate_seconds
  double comm_seconds = 0;
  double compute_seconds = 0;    // local work per element
  double aggregate_seconds = 0;  // local work per entry received or aggregated
  WireBytes bytes;               // this rank's, not the broadcast root's
  size_t collectives = 0;
  uint64_t messages = 0;         // messages this rank sends (latency terms)
  uint64_t entries = 0;          // planAggregatedEntries
};

struct LocalWork {
  double seconds_per_element = 0;  // tuning/compute_calibration.h, one rank alone
  int ranks_per_machine = 1;
  // true: the transport's own work (a kernel TCP stack, copies, waking the receiver) runs on the
  // same shared cores, so its host terms (h, w) are charged ranks_per_machine times. For links
  // given at their nominal rate while processes share a machine (the emulated cluster).
  bool transport_shares_cores = false;
  double seconds_per_entry = 0;             // local work per aggregated entry
  double transport_seconds_per_byte = 0;    // h: the transport's CPU time per byte moved
  double transport_seconds_per_message = 0; // w: the transport's CPU time per message
};

CallPrediction predictCall(const ResolvedSparseConfig& config, const CallShape& shape,
                           const LinkModel& link, const LocalWork& local);

}  // namespace sccl
