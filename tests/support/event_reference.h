// An independent model of EventGraD in synchronous mode, for exactness tests: every rank's
// parameters, events and received copies, pass by pass, written from the rule in
// docs/algorithms/eventgrad.md without the library's code. With thresholds zero it is D-PSGD.
// Inputs derive from (seed, rank, index) and (seed, rank, pass, index), so every rank (thread or
// MPI process) can run the whole model on its own and compare its own result bitwise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl_test {

inline double eventHash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + a * 0xbf58476d1ce4e5b9ull +
               b * 0x94d049bb133111ebull + c * 0xd6e8feb86659fd93ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) / static_cast<double>(uint64_t{1} << 53) * 2.0 - 1.0;
}

// Initial parameter i of rank r, and the "gradient" of rank r at pass p (a drift that differs
// per rank and tensor so norms move at different speeds).
inline double initialParam(uint64_t seed, int rank, size_t i) {
  return eventHash(seed, static_cast<uint64_t>(rank), 0, i);
}
inline double pseudoGradient(uint64_t seed, int rank, uint64_t pass, size_t i) {
  return eventHash(seed + 1, static_cast<uint64_t>(rank), pass + 1, i) +
         0.3 * std::sin(0.01 * double(i));
}

struct EventModelConfig {
  bool adaptive = true;
  double horizon = 1.0;
  double static_threshold = 0.0;
  int history = 2;
  int initial_passes = 30;
  int max_silent_passes = 0;
  bool average_differences = false;
};

// The ring: rank - 1 and rank + 1 without duplicates or self, ascending.
inline std::vector<int> ringNeighbours(int rank, int nranks) {
  std::vector<int> out;
  if (nranks > 1) out.push_back((rank + nranks - 1) % nranks);
  if (nranks > 2) out.push_back((rank + 1) % nranks);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

template <typename T>
class EventModel {
 public:
  EventModel(const EventModelConfig& config, int nranks, std::vector<std::vector<int>> neighbours,
             std::vector<size_t> sizes, uint64_t seed, double lr)
      : config_(config),
        nranks_(nranks),
        neighbours_(std::move(neighbours)),
        sizes_(std::move(sizes)),
        seed_(seed),
        lr_(lr) {
    for (size_t size : sizes_) {
      offsets_.push_back(count_);
      count_ += size;
    }
    size_t nt = sizes_.size();
    params_.assign(nranks_, std::vector<T>(count_));
    copies_.assign(nranks_, std::vector<T>(count_));
    sent_.assign(nranks_, std::vector<bool>(nt, false));
    tensors_.assign(nranks_, std::vector<TensorState>(nt));
    for (int r = 0; r < nranks_; ++r)
      for (size_t i = 0; i < count_; ++i) params_[r][i] = static_cast<T>(initialParam(seed_, r, i));
  }

  size_t count() const { return count_; }
  const std::vector<T>& params(int rank) const { return params_[rank]; }
  uint64_t events(int rank, size_t tensor) const { return tensors_[rank][tensor].events; }
  double threshold(int rank, size_t tensor) const { return thresholdOf(tensors_[rank][tensor]); }

  // The training step of rank r before pass p's exchange: x -= lr * g(r, p).
  static void gradientStep(T* x, size_t count, uint64_t seed, int rank, uint64_t pass, double lr) {
    for (size_t i = 0; i < count; ++i)
      x[i] = static_cast<T>(static_cast<double>(x[i]) - lr * pseudoGradient(seed, rank, pass, i));
  }

  // One pass of every rank: gradient step, events, then averaging with the copies.
  void pass() {
    for (int r = 0; r < nranks_; ++r) gradientStep(params_[r].data(), count_, seed_, r, pass_, lr_);
    for (int r = 0; r < nranks_; ++r) {
      for (size_t t = 0; t < sizes_.size(); ++t) {
        const T* x = params_[r].data() + offsets_[t];
        if (decide(tensors_[r][t], norm(x, sizes_[t]))) {
          std::copy(x, x + sizes_[t], copies_[r].begin() + offsets_[t]);
          sent_[r][t] = true;
        }
      }
    }
    for (int r = 0; r < nranks_; ++r) {
      double w = 1.0 / double(neighbours_[r].size() + 1);
      for (size_t t = 0; t < sizes_.size(); ++t) {
        for (size_t i = offsets_[t]; i < offsets_[t] + sizes_[t]; ++i) {
          double own = double(params_[r][i]);
          if (config_.average_differences) {
            // x + sum_j w (y_j - s), s = own last sent copy (x before the first send); a
            // neighbour without a copy adds nothing.
            double s = sent_[r][t] ? double(copies_[r][i]) : own;
            double acc = own;
            for (int j : neighbours_[r]) acc += w * ((sent_[j][t] ? double(copies_[j][i]) : s) - s);
            params_[r][i] = static_cast<T>(acc);
            continue;
          }
          double acc = w * own;
          for (int j : neighbours_[r]) acc += w * (sent_[j][t] ? double(copies_[j][i]) : own);
          params_[r][i] = static_cast<T>(acc);
        }
      }
    }
    ++pass_;
  }

 private:
  // The documented order: 8 partial sums of squares (lane i % 8), added pairwise.
  static double norm(const T* x, size_t n) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; ++i) lane[i % 8] += double(x[i]) * double(x[i]);
    return std::sqrt(((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                     ((lane[4] + lane[5]) + (lane[6] + lane[7])));
  }

  struct TensorState {
    double last_norm = 0.0;
    int64_t last_pass = -1;
    std::deque<double> slopes;
    double adaptive_threshold = 0.0;
    uint64_t events = 0;
  };

  double thresholdOf(const TensorState& s) const {
    return config_.adaptive ? s.adaptive_threshold : config_.static_threshold;
  }

  bool decide(TensorState& s, double norm) const {
    double change = std::fabs(norm - s.last_norm);
    bool silent_too_long =
        config_.max_silent_passes > 0 && int64_t(pass_) - s.last_pass >= config_.max_silent_passes;
    bool fire =
        pass_ < uint64_t(config_.initial_passes) || silent_too_long || !(change < thresholdOf(s));
    if (!fire) return false;
    s.slopes.push_back(change / double(int64_t(pass_) - s.last_pass));
    if (s.slopes.size() > size_t(config_.history)) s.slopes.pop_front();
    double sum = 0.0;
    for (double slope : s.slopes) sum += slope;
    s.adaptive_threshold = config_.horizon * (sum / double(s.slopes.size()));
    s.last_norm = norm;
    s.last_pass = int64_t(pass_);
    ++s.events;
    return true;
  }

  EventModelConfig config_;
  int nranks_;
  std::vector<std::vector<int>> neighbours_;
  std::vector<size_t> sizes_, offsets_;
  size_t count_ = 0;
  uint64_t seed_;
  double lr_;
  uint64_t pass_ = 0;
  std::vector<std::vector<T>> params_, copies_;
  std::vector<std::vector<bool>> sent_;
  std::vector<std::vector<TensorState>> tensors_;
};

inline scclEventConfig_t toEventConfig(const EventModelConfig& m) {
  scclEventConfig_t c = SCCL_EVENT_CONFIG_INITIALIZER;
  c.thresholdMode = m.adaptive ? scclEventThresholdAdaptive : scclEventThresholdStatic;
  c.horizon = m.horizon;
  c.staticThreshold = m.static_threshold;
  c.history = m.history;
  c.initialPasses = m.initial_passes;
  c.synchronous = 1;
  c.maxSilentPasses = m.max_silent_passes;
  c.averaging = m.average_differences ? scclEventAverageDifferences : scclEventAverageCopies;
  return c;
}

}  // namespace sccl_test
