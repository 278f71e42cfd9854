// Order statistics of timing samples; the order of an interleaved benchmark's rounds.
#include "timing.h"

#include <numeric>

#include "data.h"

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

std::vector<size_t> roundOrder(size_t n, uint64_t round) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  if (round == 0) return order;
  // Fisher-Yates with splitmix64 of (round, i): std::shuffle's draws differ between standard
  // libraries, and every rank must call the same operation at the same time.
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[splitmix(round, i) % i]);
  return order;
}

}  // namespace sccl_perf
