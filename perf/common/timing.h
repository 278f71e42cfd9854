// Wall-clock timing of repeated operations; the median is what perf binaries report (robust to
// the odd preempted iteration on a shared machine).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sccl_perf {

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

inline double nowMicroseconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

Timing summarize(std::vector<double> samples_us);

// Runs setup() (untimed) then op() (timed), warmup + iters times; reports the timed iterations.
template <typename Setup, typename Op>
Timing timeIterations(int warmup, int iters, Setup&& setup, Op&& op) {
  std::vector<double> samples;
  samples.reserve(iters);
  for (int i = 0; i < warmup + iters; ++i) {
    setup();
    double start = nowMicroseconds();
    op();
    double elapsed = nowMicroseconds() - start;
    if (i >= warmup) samples.push_back(elapsed);
  }
  return summarize(std::move(samples));
}

template <typename Op>
Timing timeIterations(int warmup, int iters, Op&& op) {
  return timeIterations(
      warmup, iters, [] {}, op);
}

// Times several operations round-robin (op 0, op 1, ..., op 0, ...), warmup + iters rounds, and
// reports each. Interleaving makes a ratio of two operations robust on a shared machine: a burst
// of load slows both, instead of whichever happened to run during it.
template <typename... Ops>
std::vector<Timing> timeInterleaved(int warmup, int iters, Ops&&... ops) {
  constexpr size_t kOps = sizeof...(Ops);
  std::vector<std::vector<double>> samples(kOps);
  for (int i = 0; i < warmup + iters; ++i) {
    size_t op_index = 0;
    auto time_one = [&](auto& op) {
      double start = nowMicroseconds();
      op();
      double elapsed = nowMicroseconds() - start;
      if (i >= warmup) samples[op_index].push_back(elapsed);
      ++op_index;
    };
    (time_one(ops), ...);
  }
  std::vector<Timing> timings;
  for (auto& op_samples : samples) timings.push_back(summarize(std::move(op_samples)));
  return timings;
}

// The order in which round `round` of an interleaved benchmark runs its `n` operations: a
// permutation of 0..n-1 that is the same on every rank (a function of n and round alone), round
// 0 in order and every later round shuffled. Shuffling, not a fixed order or a rotation (which
// keeps every neighbour), so that no operation always follows the same one: what one operation
// leaves behind (a drained token bucket on a shaped link, evicted caches, ranks leaving a
// collective at different times) falls on every operation in turn.
std::vector<size_t> roundOrder(size_t n, uint64_t round);

// Bytes per microsecond -> GB/s (1e9 bytes per second, as nccl-tests' algbw).
inline double gigabytesPerSecond(double bytes, double microseconds) {
  return microseconds > 0 ? bytes / microseconds / 1e3 : 0;
}

}  // namespace sccl_perf
