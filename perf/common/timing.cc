// Order statistics of timing samples.
#include "timing.h"

namespace sccl_perf {

Timing summarize(std::vector<double> samples_us) {
  Timing timing;
  if (samples_us.empty()) return timing;
  std::sort(samples_us.begin(), samples_us.end());
  size_t n = samples_us.size();
  timing.median_us = n % 2 ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2;
  timing.min_us = samples_us.front();
  timing.max_us = samples_us.back();
  return timing;
}

}  // namespace sccl_perf
