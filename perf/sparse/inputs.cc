// Gradient pools: a window per iteration into one buffer of seeded Laplace values.
#include "sparse/inputs.h"

#include <algorithm>
#include <cmath>

#include "common/data.h"
#include "common/options.h"

namespace sccl_perf {
namespace {

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Distinct ranks get unrelated streams; the same (seed, rank) always the same one.
uint64_t rankSeed(uint64_t seed, int rank) {
  return mix(seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(rank) + 1));
}

size_t offsetOf(uint64_t seed, uint64_t t) {
  return t == 0 ? 0 : static_cast<size_t>(mix(seed ^ mix(t)) % GradientPool::kPoolSlack);
}

}  // namespace

double gradientScale(size_t count, double density) {
  const double k = std::max(1.0, std::floor(density * static_cast<double>(count)));
  // Near d = 1, ln(1/d) goes to 0 and b would explode; any threshold selects nearly all there.
  const double log_inverse = std::max(std::log(1.0 / density), 0.1);
  return 1.0 / (2.0 * std::sqrt(k) * log_inverse);
}

GradientPool::GradientPool(uint64_t seed, int rank, scclDataType_t dtype, InputShape shape)
    : seed_(seed), rank_(rank), dtype_(dtype), shape_(shape) {}

std::vector<uint8_t> GradientPool::touchedRows(int rank, uint64_t t) const {
  const size_t rows = zipf_cdf_.size();
  std::vector<uint8_t> touched(rows, 0);
  const double draws = std::max(1.0, std::round(density_ * double(rows)));
  const uint64_t stream = mix(rankSeed(seed_, rank) ^ mix(t + 0x5EED));
  for (uint64_t d = 0; d < uint64_t(draws); ++d) {
    const double u = double(mix(stream + d) >> 11) * 0x1.0p-53 * zipf_cdf_.back();
    const size_t row =
        size_t(std::upper_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u) - zipf_cdf_.begin());
    touched[std::min(row, rows - 1)] = 1;
  }
  return touched;
}

void GradientPool::generate(ThreadTeam& team, size_t count, double scale, double density) {
  if (shape_.traces != nullptr) {
    // count is the traces' count: the launcher sets the sizes from them.
    prepared_.clear();
    for (size_t f = 0; f < shape_.traces->files(); ++f) {
      const std::vector<float>& values = shape_.traces->of(rank_, f);
      std::unique_ptr<unsigned char[]> buffer(new unsigned char[count * dtypeSize(dtype_)]);
      for (size_t i = 0; i < count; ++i) storeValue(buffer.get(), dtype_, i, double(values[i]));
      prepared_.push_back(std::move(buffer));
    }
    return;
  }
  const size_t needed = count + kPoolSlack;
  if (needed > capacity_) {
    pool_.reset();  // free first: at 26M elements two pools at once would double the peak
    pool_.reset(new unsigned char[needed * dtypeSize(dtype_)]);
    capacity_ = needed;
  }
  fillLaplace(team, pool_.get(), dtype_, needed, rankSeed(seed_, rank_), 0, scale);
  if (!shape_.embedding) return;
  count_ = count;
  density_ = density;
  const size_t width = shape_.row_width, rows = count == 0 ? 0 : (count - 1) / width + 1;
  zipf_cdf_.assign(rows, 0.0);
  double total = 0;
  for (size_t j = 0; j < rows; ++j) {
    total += 1.0 / std::pow(double(j + 1), shape_.zipf_s);
    zipf_cdf_[j] = total;
  }
  first_rows_.clear();
  for (int r = 0; r < shape_.nranks; ++r) first_rows_.push_back(touchedRows(r, 0));
  prepared_.clear();
  const size_t element = dtypeSize(dtype_);
  for (uint64_t t = 0; t < kEmbeddingPeriod; ++t) {
    std::vector<uint8_t> touched = touchedRows(rank_, t);
    std::unique_ptr<unsigned char[]> buffer(
        new unsigned char[std::max<size_t>(1, count) * element]);
    const unsigned char* values = pool_.get() + offsetOf(seed_, t) * element;
    for (size_t i = 0; i < count; ++i) {
      if (touched[i / width]) {
        std::copy_n(values + i * element, element, buffer.get() + i * element);
      } else {
        storeValue(buffer.get(), dtype_, i, 0.0);
      }
    }
    prepared_.push_back(std::move(buffer));
  }
}

const void* GradientPool::iteration(uint64_t t) const {
  if (shape_.traces != nullptr) return prepared_[t % prepared_.size()].get();
  if (shape_.embedding) return prepared_[t % kEmbeddingPeriod].get();
  return pool_.get() + offsetOf(seed_, t) * dtypeSize(dtype_);
}

double GradientPool::firstGradient(int rank, double scale, size_t i) const {
  if (shape_.embedding && !first_rows_[size_t(rank)][i / shape_.row_width]) return 0.0;
  unsigned char element[8];
  const double value = shape_.traces != nullptr ? double(shape_.traces->of(rank, 0)[i])
                                                : scale * laplaceValue(rankSeed(seed_, rank), i);
  storeValue(element, dtype_, 0, value);
  return loadAsDouble(element, dtype_, 0);
}

}  // namespace sccl_perf
