// A straightforward model of the sketch reduction (preset s2), written independently of
// src/algorithms/ and src/kernels/ so tests can compare the library's outputs and residuals
// bitwise. It takes from the library only the hash and sign functions (algorithms/
// count_sketch.h, checked on their own against splitmix64's published values) and the sketch
// width rule: c = max(1, ceil(lambda * k)) for top-K block selection, and for "nonzero"
// selection c = max(1, ceil(lambda * max_r k_r)) per call, k_r = elements in rank r's marked
// blocks.
//
// Per call: acc_r = residual_r + gradient_r; each rank marks blocks (top-K by L2 norm among
// non-zero blocks, ties to the lower block, or every non-zero block); encodes its non-zero acc
// values of its marked blocks into its own table in index order; the tables are summed in rank
// order; the output in every block of the union is the median over rows (mean of the middle
// two for even r) divided by n for avg; the residual loses the rank's own marked blocks
// ("unselected") or becomes acc - median / n in the union ("decode_error").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/shared/count_sketch.h"

namespace sccl_test {

struct SketchModelConfig {
  size_t count = 0;
  size_t block = 32;
  uint32_t rows = 3;
  double lambda = 0.5;
  uint64_t seed = 0;
  uint64_t k = 1;  // max(1, floor(density * count))
  bool nonzero = false;
  bool decode_error = false;
  bool error_feedback = true;

  uint64_t width() const { return widthFor(k); }
  uint64_t widthFor(uint64_t elements) const {
    return std::max<uint64_t>(1, uint64_t(std::ceil(lambda * double(elements))));
  }
  size_t blocks() const { return count == 0 ? 0 : (count - 1) / block + 1; }
  uint64_t maxBlocks() const {
    return std::min<uint64_t>(blocks(), std::max<uint64_t>(1, (k + block - 1) / block));
  }
};

template <typename Acc>
struct SketchModelCall {
  std::vector<Acc> output;       // what recvbuf holds, in the accumulator type
  std::vector<uint64_t> counts;  // elements in each rank's marked blocks
  uint64_t k_global = 0;         // elements in the union of marked blocks
  std::vector<uint8_t> united;
  uint64_t width = 0;  // the sketch width of this call
};

template <typename Acc>
class SketchReference {
 public:
  SketchReference(const SketchModelConfig& config, int nranks)
      : c_(config), n_(nranks), residual_(size_t(nranks), std::vector<Acc>(config.count, Acc(0))) {}

  SketchModelCall<Acc> step(const std::vector<std::vector<Acc>>& grads, bool average) {
    const size_t blocks = c_.blocks();
    std::vector<std::vector<Acc>> acc(static_cast<size_t>(n_), std::vector<Acc>(c_.count));
    for (int r = 0; r < n_; ++r)
      for (size_t i = 0; i < c_.count; ++i)
        acc[size_t(r)][i] =
            c_.error_feedback ? residual_[size_t(r)][i] + grads[size_t(r)][i] : grads[size_t(r)][i];
    SketchModelCall<Acc> call;
    call.united.assign(blocks, 0);
    std::vector<std::vector<uint8_t>> marks(static_cast<size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      marks[size_t(r)] = mark(acc[size_t(r)]);
      uint64_t elements = 0;
      for (size_t b = 0; b < blocks; ++b) {
        if (!marks[size_t(r)][b]) continue;
        call.united[b] = 1;
        elements += blockEnd(b) - b * c_.block;
      }
      call.counts.push_back(elements);
    }
    width_ = c_.nonzero ? c_.widthFor(*std::max_element(call.counts.begin(), call.counts.end()))
                        : c_.width();
    call.width = width_;
    std::vector<Acc> table(size_t(c_.rows) * width_, Acc(0));
    for (int r = 0; r < n_; ++r) {
      std::vector<Acc> mine = encode(acc[size_t(r)], marks[size_t(r)]);
      for (size_t cell = 0; cell < table.size(); ++cell)
        table[cell] = r == 0 ? mine[cell] : table[cell] + mine[cell];
    }
    call.output.assign(c_.count, Acc(0));
    std::vector<Acc> share(c_.count, Acc(0));
    for (size_t b = 0; b < blocks; ++b) {
      if (!call.united[b]) continue;
      call.k_global += blockEnd(b) - b * c_.block;
      for (size_t i = b * c_.block; i < blockEnd(b); ++i) {
        const Acc estimate = median(table, i);
        call.output[i] = average && n_ != 1 ? estimate / Acc(n_) : estimate;
        share[i] = n_ != 1 ? estimate / Acc(n_) : estimate;
      }
    }
    for (int r = 0; r < n_; ++r) {
      for (size_t b = 0; b < blocks; ++b) {
        for (size_t i = b * c_.block; i < blockEnd(b); ++i) {
          if (c_.decode_error) {
            if (call.united[b]) acc[size_t(r)][i] = acc[size_t(r)][i] - share[i];
          } else if (marks[size_t(r)][b]) {
            acc[size_t(r)][i] = Acc(0);
          }
        }
      }
    }
    if (c_.error_feedback) residual_ = std::move(acc);
    return call;
  }

  const std::vector<Acc>& residual(int rank) const { return residual_[size_t(rank)]; }

 private:
  size_t blockEnd(size_t b) const { return std::min(c_.count, (b + 1) * c_.block); }

  std::vector<uint8_t> mark(const std::vector<Acc>& acc) const {
    const size_t blocks = c_.blocks();
    std::vector<uint8_t> marks(blocks, 0);
    std::vector<double> norm(blocks, 0.0);
    std::vector<size_t> candidates;
    for (size_t b = 0; b < blocks; ++b) {
      bool any = false;
      for (size_t i = b * c_.block; i < blockEnd(b); ++i) {
        norm[b] += double(acc[i]) * double(acc[i]);
        any = any || acc[i] != Acc(0);
      }
      if (c_.nonzero) {
        marks[b] = any ? 1 : 0;
      } else if (norm[b] > 0) {
        candidates.push_back(b);
      }
    }
    if (c_.nonzero) return marks;
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](size_t a, size_t b) { return norm[a] > norm[b]; });
    candidates.resize(std::min<size_t>(candidates.size(), c_.maxBlocks()));
    for (size_t b : candidates) marks[b] = 1;
    return marks;
  }

  std::vector<Acc> encode(const std::vector<Acc>& acc, const std::vector<uint8_t>& marks) const {
    const uint64_t width = width_;
    std::vector<Acc> table(size_t(c_.rows) * width, Acc(0));
    for (uint32_t j = 0; j < c_.rows; ++j) {
      const uint64_t key = sccl::sketchRowKey(c_.seed, j);
      for (size_t i = 0; i < c_.count; ++i) {
        if (!marks[i / c_.block] || acc[i] == Acc(0)) continue;
        const uint64_t h = sccl::sketchHash(key, i);
        Acc& cell = table[j * width + sccl::sketchBucket(h, width)];
        cell = sccl::sketchNegative(h) ? cell - acc[i] : cell + acc[i];
      }
    }
    return table;
  }

  Acc median(const std::vector<Acc>& table, size_t i) const {
    const uint64_t width = width_;
    std::vector<Acc> estimates;
    for (uint32_t j = 0; j < c_.rows; ++j) {
      const uint64_t h = sccl::sketchHash(sccl::sketchRowKey(c_.seed, j), i);
      const Acc value = table[j * width + sccl::sketchBucket(h, width)];
      estimates.push_back(sccl::sketchNegative(h) ? -value : value);
    }
    std::sort(estimates.begin(), estimates.end());
    const size_t r = estimates.size();
    return r % 2 == 1 ? estimates[r / 2] : (estimates[r / 2 - 1] + estimates[r / 2]) / Acc(2);
  }

  SketchModelConfig c_;
  int n_;
  uint64_t width_ = 1;
  std::vector<std::vector<Acc>> residual_;
};

}  // namespace sccl_test
