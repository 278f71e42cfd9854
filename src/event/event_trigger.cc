#include "event/event_trigger.h"

#include <cmath>

#include "core/error.h"

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

void TensorTrigger::saveState(StateWriter& w) const {
  w.f64(last_norm_);
  w.i64(last_pass_);
  w.f64(adaptive_threshold_);
  w.u64(slopes_.size());
  for (double slope : slopes_) w.f64(slope);
  w.u64(next_slope_);
  w.u64(events_);
}

scclResult_t TensorTrigger::loadState(StateReader& r, uint64_t pass) {
  // Norms, slopes and thresholds may be NaN or infinite: a diverged tensor keeps firing.
  double last_norm = 0, threshold = 0;
  int64_t last_pass = 0;
  uint64_t nslopes = 0, next = 0, events = 0;
  SCCL_CHECK(r.f64("trigger's last norm", &last_norm));
  SCCL_CHECK(r.i64("trigger's last event pass", &last_pass));
  SCCL_CHECK(r.f64("trigger's threshold", &threshold));
  SCCL_CHECK(r.u64("trigger's slope count", &nslopes));
  const auto history = static_cast<uint64_t>(config_.history);
  SCCL_REQUIRE_ARG(
      nslopes <= history, "event checkpoint: a trigger with %llu slopes, its history holds %llu",
      static_cast<unsigned long long>(nslopes), static_cast<unsigned long long>(history));
  std::vector<double> slopes(nslopes);
  for (double& slope : slopes) SCCL_CHECK(r.f64("trigger's slope", &slope));
  SCCL_CHECK(r.u64("trigger's next slope", &next));
  SCCL_CHECK(r.u64("trigger's events", &events));
  SCCL_REQUIRE_ARG(last_pass >= -1 && (last_pass < 0 || uint64_t(last_pass) < pass) &&
                       events <= pass && nslopes <= events &&
                       next == (nslopes < history ? nslopes : next) && next < history,
                   "event checkpoint: a trigger's state is inconsistent with pass %llu (last event "
                   "at pass %lld, %llu events, %llu slopes, next slope %llu)",
                   static_cast<unsigned long long>(pass), static_cast<long long>(last_pass),
                   static_cast<unsigned long long>(events),
                   static_cast<unsigned long long>(nslopes), static_cast<unsigned long long>(next));
  last_norm_ = last_norm;
  last_pass_ = last_pass;
  adaptive_threshold_ = threshold;
  slopes_ = std::move(slopes);
  slopes_.reserve(static_cast<size_t>(config_.history));
  next_slope_ = static_cast<size_t>(next);
  events_ = events;
  return scclSuccess;
}

}  // namespace sccl
