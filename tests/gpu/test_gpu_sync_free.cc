// The sync_free device steps against the CPU reduction: n ranks emulated on one GPU (the
// all-gather is a concatenation of the slots, the all-reduce a rank-order sum on the host), each
// step on the device with no host synchronisation inside it, then the outputs, residuals and
// thresholds compared bit for bit with the CPU run of micro_sync_free (band scaling rule: only
// IEEE multiplications, so the device threshold update is bitwise the CPU's too).
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/sync_free_capacity.h"
#include "bit_mismatch.h"
#include "sparsifier/sparse_config.h"
#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
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
