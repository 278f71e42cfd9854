// The time of one collective on a link of latency alpha and bandwidth beta: the textbook costs of
// the algorithms MPI libraries choose between (Thakur, Rabenseifner & Gropp, "Optimization of
// Collective Communication Operations in MPICH", IJHPCA 2005), the cheapest of them for the size,
// since a tuned transport picks that one. With L = ceil(log2 n):
//   all-gather of B per rank:  min(ring (n-1)(alpha + B/beta), recursive doubling L alpha + (n-1) B/beta)
//   all-reduce of S bytes:     min(recursive doubling L (alpha + S/beta),
//                                  Rabenseifner 2 L alpha + 2 (n-1)/n S/beta)
//   broadcast of B:            min(binomial tree L (alpha + B/beta),
//                                  scatter + all-gather (L + n - 1) alpha + 2 (n-1)/n B/beta)
// What it leaves out (docs/cost_model.md): the reduction's arithmetic inside the all-reduce, link
// contention beyond one message per rank at a time, and a transport that does not pick the
// cheapest algorithm (NCCL rings pay 2 (n-1) alpha for an all-reduce).
#pragma once

#include "tuning/wire_plan.h"

namespace sccl {

struct LinkModel {
  double latency_s = 0;     // alpha: seconds per message
  double bytes_per_s = 0;   // beta: bytes per second of one rank's link, each way
};

struct CollectiveCost {
  double seconds = 0;
  int messages = 0;  // messages each rank sends in the cheapest algorithm (its alpha terms)
};

// The collective among nranks on the link, priced by the cheapest algorithm; 0 with one rank.
// bytes_per_s must be > 0.
CollectiveCost collectiveCost(const PlannedCollective& collective, int nranks,
                              const LinkModel& link);

// collectiveCost(...).seconds.
double collectiveSeconds(const PlannedCollective& collective, int nranks, const LinkModel& link);

}  // namespace sccl
