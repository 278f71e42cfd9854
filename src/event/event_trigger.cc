#include "event/event_trigger.h"

#include <cmath>

namespace sccl {

TensorTrigger::TensorTrigger(const TriggerConfig& config) : config_(config) {
  slopes_.reserve(static_cast<size_t>(config.history));
}

double TensorTrigger::threshold() const {
  return config_.adaptive ? adaptive_threshold_ : config_.static_threshold;
}

bool TensorTrigger::decide(uint64_t pass, double norm) {
  double change = std::fabs(norm - last_norm_);
  bool forced = pass < static_cast<uint64_t>(config_.initial_passes) ||
                (config_.max_silent_passes > 0 &&
                 static_cast<int64_t>(pass) - last_pass_ >= config_.max_silent_passes);
  // !(change < threshold): a NaN norm fires, so a diverged tensor reaches the neighbours.
  if (!forced && change < threshold()) return false;
  double passes_since = static_cast<double>(static_cast<int64_t>(pass) - last_pass_);
  double slope = change / passes_since;
  if (slopes_.size() < static_cast<size_t>(config_.history)) {
    slopes_.push_back(slope);
  } else {
    slopes_[next_slope_] = slope;
  }
  next_slope_ = (next_slope_ + 1) % static_cast<size_t>(config_.history);
  // Summed oldest first, so the mean does not depend on where the ring starts.
  double sum = 0.0;
  size_t n = slopes_.size();
  size_t oldest = n < static_cast<size_t>(config_.history) ? 0 : next_slope_;
  for (size_t i = 0; i < n; ++i) sum += slopes_[(oldest + i) % n];
  adaptive_threshold_ = config_.horizon * (sum / static_cast<double>(n));
  last_norm_ = norm;
  last_pass_ = static_cast<int64_t>(pass);
  ++events_;
  return true;
}

}  // namespace sccl
