// The EventGraD trigger of one parameter tensor: decides on every pass whether the tensor is sent,
// from how far its L2 norm moved since it was last sent.
//
// Paper: S. Ghosh, V. Gupta, "EventGraD: Event-Triggered Communication in Parallel Stochastic
// Gradient Descent" (Workshop on Machine Learning in HPC Environments, SC20, 2020), section IV. Rule, per tensor i at pass p:
//   change = | ||theta_i|| - norm at the last event |
//   event  = p < initialPasses  or  change >= threshold        (NaN change: event)
//   on an event: slope = change / (p - pass of the last event) enters a history of the last
//   `history` slopes; adaptive: threshold = horizon x mean(history), kept until the next event;
//   static: threshold = staticThreshold always.
// Before the first event the last norm is 0, the last pass -1 (so the first slope is ||theta||
// per pass) and the adaptive threshold 0.
// Option beyond the paper (off by default): max_silent_passes > 0 also fires when the tensor has
// not been sent for that many passes. Under the paper's rule a tensor whose norm stops moving is
// never sent again, and averaging with the neighbours' frozen copies pins it (and them) in place;
// the bound keeps every copy at most max_silent_passes passes old.
//
// Deliberate differences from the reference code (dmnist/event/event.cpp):
//  - it multiplies the threshold by the horizon on every pass (geometric growth or decay unless
//    horizon is 1); we apply the paper's rule, slope x horizon fixed until the next event. With
//    the paper's horizon 1 both agree.
//  - it forces sends while pass < 30 with passes counted from 1, i.e. 29 passes; initialPasses
//    counts the forced passes exactly (default 30).
//  - its slope history starts as zeros that enter the mean; ours averages the slopes recorded so
//    far (at most `history`). After `history` events both agree.
// Passes over the data: one read of the tensor for its norm (by the caller).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/state_stream.h"

namespace sccl {

struct TriggerConfig {
  bool adaptive = true;
  double horizon = 1.0;
  double static_threshold = 0.0;
  int history = 2;
  int initial_passes = 30;
  int max_silent_passes = 0;  // > 0: an event at the latest this many passes after the last one
};

class TensorTrigger {
 public:
  explicit TensorTrigger(const TriggerConfig& config);

  // Decides the event of pass `pass` (0, 1, 2, ... in order) for a tensor of L2 norm `norm`, and
  // records it when it fires. Returns true on an event.
  bool decide(uint64_t pass, double norm);

  // The threshold the next decision compares with.
  double threshold() const;
  uint64_t events() const { return events_; }
  double lastSentNorm() const { return last_norm_; }
  int64_t lastSentPass() const { return last_pass_; }

  // Checkpoints (event/event_state.h): everything decide() carries to the next pass. loadState
  // reads it into a trigger of the same config, `pass` passes in: the last event before that
  // pass, no more events than passes, a slope history within `history`; else
  // scclInvalidArgument and nothing changes.
  void saveState(StateWriter& w) const;
  scclResult_t loadState(StateReader& r, uint64_t pass);

 private:
  TriggerConfig config_;
  double last_norm_ = 0.0;
  int64_t last_pass_ = -1;
  double adaptive_threshold_ = 0.0;
  std::vector<double> slopes_;  // ring of the last `history` slopes
  size_t next_slope_ = 0;
  uint64_t events_ = 0;
};

}  // namespace sccl
