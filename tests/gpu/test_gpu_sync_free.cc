// The resident sync_free call's CUDA kernels against the CPU reduction: n ranks emulated on one
// GPU (the all-gather is a concatenation of the slots, the all-reduce a rank-order sum on the
// host), each step on the device with no host synchronisation inside it, then the outputs,
// residuals and thresholds compared bit for bit with the CPU run of micro_sync_free (band scaling
// rule: only IEEE multiplications, so the device threshold update is bitwise the CPU's too); and
// the capped selection against its definition.
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

namespace {

// One emulated rank's words of the resident sync_free call (kernels/shared/sync_free_call.h).
struct RankWords {
  explicit RankWords(int nranks)
      : threshold(1),
        nonfinite(1),
        bad(1),
        sequence(std::vector<uint64_t>{0}),
        status(1),
        totals(3),
        ranges(2 * size_t(nranks)),
        partitions(2 * size_t(nranks)),
        exdyna(4 * size_t(nranks)),
        fault(std::vector<uint64_t>{0}) {}
  sccl::SyncFreeWords words(int nranks, size_t capacity) {
    sccl::SyncFreeWords w;
    w.nranks = nranks;
    w.capacity = capacity;
    w.ranges = ranges.get();
    w.partitions = partitions.get();
    w.exdyna = exdyna.get();
    w.threshold = threshold.get();
    w.nonfinite = nonfinite.get();
    w.bad = bad.get();
    w.sequence = sequence.get();
    w.status = status.get();
    w.totals = reinterpret_cast<sccl::SyncFreeTotals*>(totals.get());
    w.fault = fault.get();
    return w;
  }
  DeviceBuffer<double> threshold;
  DeviceBuffer<uint64_t> nonfinite;
  DeviceBuffer<uint32_t> bad;
  DeviceBuffer<uint64_t> sequence;
  DeviceBuffer<uint32_t> status;
  DeviceBuffer<uint64_t> totals;
  DeviceBuffer<uint64_t> ranges, partitions;
  DeviceBuffer<int64_t> exdyna;
  DeviceBuffer<uint64_t> fault;
};

}  // namespace

TEST_CASE("gpu sync free steps reproduce the cpu micro sync free run bit for bit",
          "[gpu][sync_free]") {
  // The resident call's kernels (algorithms/resident_sync_free.cc) for n ranks emulated on one
  // GPU: each rank's selection goes straight into its place of the all-gather, the all-reduce is
  // a rank-order sum on the host, every decision stays in each rank's device words.
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
  std::vector<uint64_t> partitions;
  for (int p = 0; p < nranks; ++p) {
    const sccl::IndexRange part = search->partition(size_t(p));
    partitions.push_back(part.begin);
    partitions.push_back(part.end);
  }

  sccl::CudaKernels gpu;
  std::vector<DeviceBuffer<float>*> residual, acc, recv;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> owned;
  std::vector<std::unique_ptr<RankWords>> words;
  for (int r = 0; r < nranks; ++r) {
    for (auto* list : {&residual, &acc, &recv}) {
      owned.push_back(std::make_unique<DeviceBuffer<float>>(std::vector<float>(count, 0.0f)));
      list->push_back(owned.back().get());
    }
    words.push_back(std::make_unique<RankWords>(nranks));
    words.back()->threshold.write({run.calls[0][0].stats.threshold});
    words.back()->partitions.write(partitions);
  }
  DeviceBuffer<int64_t> gathered(nranks * slot);
  DeviceBuffer<float> values(nranks * capacity);
  for (int t = 0; t < iterations; ++t) {
    for (int r = 0; r < nranks; ++r) {
      const sccl::SyncFreeWords w = words[size_t(r)]->words(nranks, capacity);
      std::vector<float> grad(count);
      for (size_t i = 0; i < count; ++i) grad[i] = gradient(r, uint64_t(t), i);
      DeviceBuffer<float> d_grad(grad);
      REQUIRE(gpu.syncFreeBeginCall(w, nullptr) == scclSuccess);
      REQUIRE(gpu.accumulate(acc[r]->get(), residual[r]->get(), scclFloat32, d_grad.get(),
                             scclFloat32, count, w.nonfinite, nullptr) == scclSuccess);
      REQUIRE(gpu.syncFreeSelect(acc[r]->get(), scclFloat32, w.ranges + 2 * r, count, {},
                                 w.threshold, capacity, capacity, w.nonfinite, 1, w.sequence,
                                 gathered.get() + r * slot, nullptr) == scclSuccess);
    }
    // The all-reduce: rank-order sum of every rank's value slots, with the transports' combine
    // (a NaN sum canonical, as every transport writes it).
    std::vector<float> sum(nranks * capacity, 0.0f);
    for (int r = 0; r < nranks; ++r) {
      const sccl::SyncFreeWords w = words[size_t(r)]->words(nranks, capacity);
      REQUIRE(gpu.syncFreeCheck(gathered.get(), w, 1, false, nullptr) == scclSuccess);
      REQUIRE(gpu.syncFreeGatherSlots(acc[r]->get(), scclFloat32, gathered.get(), w, values.get(),
                                      nullptr) == scclSuccess);
      std::vector<float> mine = values.read();
      for (size_t s = 0; s < sum.size(); ++s)
        sum[s] = r == 0 ? mine[s] : sccl::rankOrderCombine(sum[s], mine[s], sccl::ReduceOp::Sum);
    }
    DeviceBuffer<float> d_sum(sum);
    for (int r = 0; r < nranks; ++r) {
      const sccl::SyncFreeWords w = words[size_t(r)]->words(nranks, capacity);
      REQUIRE(gpu.syncFreeWrite(recv[r]->get(), scclFloat32, count, acc[r]->get(), scclFloat32,
                                gathered.get(), w, d_sum.get(), 1, nullptr) == scclSuccess);
      std::swap(acc[r], residual[r]);
      REQUIRE(gpu.copyByStatus(residual[r]->get(), acc[r]->get(), count * 4, w.status, false,
                               nullptr) == scclSuccess);
      REQUIRE(gpu.syncFreeEndCall(gathered.get(), w, k, &rule, nullptr, nullptr) == scclSuccess);
    }
    for (int r = 0; r < nranks; ++r) {
      INFO("call " << t << " rank " << r);
      CHECK(words[size_t(r)]->status.read()[0] == sccl::kSyncFreeCompletes);
      CHECK(words[size_t(r)]->fault.read()[0] == 0);
      const RankIteration& want = run.calls[size_t(t)][size_t(r)];
      CHECK_BITS("output", want.output, recv[r]->read());
      CHECK_BITS("residual", want.residual, residual[r]->read());
    }
    if (t + 1 < iterations)
      CHECK(words[0]->threshold.read()[0] == run.calls[size_t(t) + 1][0].stats.threshold);
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
  REQUIRE(gpu.syncFreeSelect(d_x.get(), dtype, bounds.get(), items, {}, d_threshold.get(), capacity,
                             capacity, nullptr, 99, sequence.get(), slot.get(),
                             nullptr) == scclSuccess);
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
