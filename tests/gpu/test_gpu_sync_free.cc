// The sync_free device steps against the CPU reduction: n ranks emulated on one GPU (the
// all-gather is a concatenation of the slots, the all-reduce a rank-order sum on the host), each
// step on the device with no host synchronisation inside it, then the outputs, residuals and
// thresholds compared bit for bit with the CPU run of micro_sync_free (band scaling rule: only
// IEEE multiplications, so the device threshold update is bitwise the CPU's too).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/sync_free_capacity.h"
#include "bit_mismatch.h"
#include "sparsifier/sparse_config.h"
#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
#include "kernels/shared/half.h"
#include "kernels/shared/magnitude_bits.h"
#include "kernels/shared/rank_order_combine.h"
#include "support/sparse_reference.h"
#include "support/sparse_runs.h"

using namespace sccl_test;
using sccl_gpu_test::DeviceBuffer;

TEST_CASE("gpu sync free steps reproduce the cpu micro sync free run bit for bit",
          "[gpu][sync_free]") {
  const int nranks = 3, iterations = 6;
  const size_t count = 30011;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    return gradientValue(19, r, t, i) * (i < count / 5 ? 10.0f : 1.0f);
  };
  scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
  config.scalingRule = "band";
  SparseRun run = runSparse(nranks, count, config, iterations, gradient);
  REQUIRE_NO_RANK_FAILURES(run.failures);
  const uint64_t k = run.calls[0][0].stats.kTarget;
  const size_t capacity = sccl::syncFreeCapacity(k, nranks, config.maxDensitySlack, count);
  const size_t slot = 4 + capacity;
  auto search = presetSearchSpace("micro", count, nranks);
  sccl::ScalingRule rule;
  rule.proportional = false;
  rule.band = config.scalingBand;
  rule.step = config.scalingStep;

  sccl::CudaKernels gpu;
  std::vector<DeviceBuffer<float>*> residual, acc, recv;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> owned;
  for (int r = 0; r < nranks; ++r) {
    for (auto* list : {&residual, &acc, &recv}) {
      owned.push_back(std::make_unique<DeviceBuffer<float>>(count));
      list->push_back(owned.back().get());
    }
  }
  DeviceBuffer<double> threshold(std::vector<double>{run.calls[0][0].stats.threshold});
  DeviceBuffer<int64_t> gathered(nranks * slot);
  DeviceBuffer<float> values(nranks * capacity), summed(nranks * capacity);
  DeviceBuffer<uint32_t> bad(1);
  DeviceBuffer<uint64_t> sequence(1);
  for (int t = 0; t < iterations; ++t) {
    std::vector<uint64_t> ranges;
    for (int r = 0; r < nranks; ++r) {
      sccl::IndexRange range = search->rangeFor(r, uint64_t(t));
      ranges.push_back(range.begin);
      ranges.push_back(range.end);
    }
    DeviceBuffer<uint64_t> d_ranges(ranges);
    const std::vector<uint64_t> call_number{uint64_t(t)};
    sequence.write(call_number);
    for (int r = 0; r < nranks; ++r) {
      std::vector<float> grad(count);
      for (size_t i = 0; i < count; ++i) grad[i] = gradient(r, uint64_t(t), i);
      DeviceBuffer<float> d_grad(grad);
      REQUIRE(gpu.accumulate(acc[r]->get(), residual[r]->get(), scclFloat32, d_grad.get(),
                             scclFloat32, count, nullptr, nullptr) == scclSuccess);
      REQUIRE(gpu.syncFreeSelect(acc[r]->get(), scclFloat32, d_ranges.get() + 2 * r,
                                 ranges[2 * r + 1] - ranges[2 * r], threshold.get(), capacity,
                                 nullptr, 1, sequence.get(), gathered.get() + r * slot,
                                 nullptr) == scclSuccess);
    }
    // The all-reduce: rank-order sum of every rank's value slots, with the transports' combine
    // (a NaN sum canonical, as every transport writes it).
    std::vector<float> sum(nranks * capacity, 0.0f);
    for (int r = 0; r < nranks; ++r) {
      REQUIRE(gpu.syncFreeGatherSlots(acc[r]->get(), scclFloat32, count, gathered.get(),
                                      d_ranges.get(), nranks, capacity, values.get(), bad.get(),
                                      nullptr) == scclSuccess);
      std::vector<float> mine = values.read();
      for (size_t s = 0; s < sum.size(); ++s)
        sum[s] = r == 0 ? mine[s] : sccl::rankOrderCombine(sum[s], mine[s], false);
    }
    DeviceBuffer<float> d_sum(sum);
    for (int r = 0; r < nranks; ++r) {
      REQUIRE(gpu.fillZero(recv[r]->get(), count * 4, nullptr) == scclSuccess);
      REQUIRE(gpu.syncFreeWrite(recv[r]->get(), scclFloat32, acc[r]->get(), scclFloat32, count,
                                gathered.get(), d_ranges.get(), nranks, capacity, d_sum.get(), 1,
                                nullptr, nullptr) == scclSuccess);
      std::swap(acc[r], residual[r]);
    }
    REQUIRE(gpu.syncFreeUpdateThreshold(gathered.get(), nranks, capacity, k, rule, nullptr,
                                        threshold.get(), nullptr) == scclSuccess);
    CHECK(bad.read()[0] == 0);
    for (int r = 0; r < nranks; ++r) {
      INFO("call " << t << " rank " << r);
      const RankIteration& want = run.calls[size_t(t)][size_t(r)];
      CHECK_BITS("output", want.output, recv[r]->read());
      CHECK_BITS("residual", want.residual, residual[r]->read());
    }
    if (t + 1 < iterations)
      CHECK(threshold.read()[0] == run.calls[size_t(t) + 1][0].stats.threshold);
  }
}

namespace {

// The capped selection's definition, written plainly: the entries of [begin, end) with
// magnitude pattern >= the threshold's; when more than `capacity`, the capacity largest patterns,
// ties at the cut-off to the lowest indices; ascending.
template <typename Bits>
std::vector<int64_t> cappedReference(const std::vector<Bits>& x, size_t begin, size_t end,
                                     uint64_t threshold_bits, size_t capacity) {
  std::vector<std::pair<uint64_t, int64_t>> found;
  for (size_t i = begin; i < end; ++i) {
    const uint64_t m = sccl::magnitudeBits(x[i]);
    if (m >= threshold_bits) found.emplace_back(m, int64_t(i));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (found.size() > capacity) found.resize(capacity);
  std::vector<int64_t> kept;
  for (const auto& f : found) kept.push_back(f.second);
  std::sort(kept.begin(), kept.end());
  return kept;
}

// Values on a coarse grid (many equal magnitudes, so the cut-off has ties), with inf and NaN.
template <typename Bits>
std::vector<Bits> coarseValues(size_t n, uint32_t seed) {
  std::vector<Bits> x(n);
  for (size_t i = 0; i < n; ++i) {
    double v = std::round(double(gradientValue(seed, 0, 0, i)) * 8.0) / 8.0;
    if (i % 4099 == 17) v = INFINITY;
    if (i % 6007 == 23) v = NAN;
    if constexpr (sizeof(Bits) == 8) {
      std::memcpy(&x[i], &v, 8);
    } else {
      x[i] = sccl::floatToBits(float(v));
    }
  }
  return x;
}

template <typename Bits>
void checkCappedSelection(size_t n, size_t begin, size_t end, size_t items, double threshold,
                          size_t capacity) {
  const scclDataType_t dtype = sizeof(Bits) == 8 ? scclFloat64 : scclFloat32;
  INFO("n " << n << " range [" << begin << ", " << end << ") items " << items << " threshold "
            << threshold << " capacity " << capacity << " dtype " << dtype);
  const std::vector<Bits> x = coarseValues<Bits>(n, 29);
  const std::vector<int64_t> want =
      cappedReference(x, begin, end, sccl::thresholdBits(dtype, threshold), capacity);
  sccl::CudaKernels gpu;
  DeviceBuffer<Bits> d_x(x);
  DeviceBuffer<uint64_t> bounds(std::vector<uint64_t>{begin, end});
  DeviceBuffer<double> d_threshold(std::vector<double>{threshold});
  DeviceBuffer<uint64_t> sequence(std::vector<uint64_t>{7});
  DeviceBuffer<int64_t> slot(4 + capacity);
  REQUIRE(gpu.syncFreeSelect(d_x.get(), dtype, bounds.get(), items, d_threshold.get(), capacity,
                             nullptr, 99, sequence.get(), slot.get(), nullptr) == scclSuccess);
  const std::vector<int64_t> got = slot.read();
  REQUIRE(got[0] == int64_t(want.size()));
  CHECK(got[3] == 7);
  std::vector<int64_t> got_kept(got.begin() + 4, got.begin() + 4 + long(want.size()));
  CHECK_BITS("kept indices", want, got_kept);
  std::vector<int64_t> padding(got.begin() + 4 + long(want.size()), got.end());
  CHECK(padding == std::vector<int64_t>(capacity - want.size(), -1));
}

}  // namespace

TEST_CASE("gpu capped selection keeps the largest, ties to the lowest indices",
          "[gpu][sync_free]") {
  for (size_t capacity : {size_t(1), size_t(17), size_t(3000), size_t(100003)}) {
    for (double threshold : {0.5, 2.0}) {
      checkCappedSelection<uint32_t>(100003, 777, 90001, 90001 - 777 + 1000, threshold, capacity);
      checkCappedSelection<uint64_t>(100003, 0, 100003, 100003, threshold, capacity);
    }
  }
  // More tiles than the grid (2048 of 8192 entries), so that the blocks loop.
  checkCappedSelection<uint32_t>(17000003, 5, 17000000, 17000000, 3.0, 20000);
  checkCappedSelection<uint32_t>(17000003, 5, 17000000, 17000000, 3.0, 2000000);
}
