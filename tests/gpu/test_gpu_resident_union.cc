// The resident union call's plan on the GPU (cuda/kernels/resident_union.cu: CUB's radix sort
// and unique over the slot entries) against the CPU backend's (a merge), word for word: valid
// slots with many repeats across ranks, and each refusal (another call, a count above the slot,
// non-finite values, an index out of order, one past the vector, a count past a speculative slot).
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
#include "kernels/kernels.h"
#include "kernels/shared/union_plan.h"
#include "support/union_slots.h"

using sccl_gpu_test::DeviceBuffer;

namespace {

using sccl_test::kUnionCapacity;
using sccl_test::kUnionCount;
using sccl_test::kUnionRanks;
constexpr size_t kRanks = kUnionRanks, kCapacity = kUnionCapacity, kCount = kUnionCount;

std::string comparePlans(const std::vector<uint64_t>& slots, const sccl::GatherPlanParams& p) {
  std::vector<uint64_t> ranges(2 * kRanks);
  for (size_t r = 0; r < kRanks; ++r) ranges[2 * r + 1] = kCount;
  std::vector<uint64_t> cpu_plan(sccl::gatherPlanWords(kRanks));
  std::vector<int64_t> cpu_global(kRanks * kCapacity);
  REQUIRE(sccl::cpuKernels().planUnion(slots.data(), p, kCapacity, ranges.data(), cpu_global.data(),
                                       cpu_plan.data(), nullptr) == scclSuccess);
  sccl::CudaKernels gpu;
  DeviceBuffer<uint64_t> d_slots(slots), d_ranges(ranges), d_plan(cpu_plan.size());
  DeviceBuffer<int64_t> d_global(kRanks * kCapacity);
  REQUIRE(gpu.planUnion(d_slots.get(), p, kCapacity, d_ranges.get(), d_global.get(), d_plan.get(),
                        nullptr) == scclSuccess);
  const std::vector<uint64_t> gpu_plan = d_plan.read();
  for (size_t w = 0; w < cpu_plan.size(); ++w) {
    if (gpu_plan[w] != cpu_plan[w])
      return "plan word " + std::to_string(w) + ": " + std::to_string(gpu_plan[w]) + ", CPU " +
             std::to_string(cpu_plan[w]);
  }
  if (cpu_plan[sccl::kPlanStatus] != sccl::kPlanOk) return "";
  const size_t u = size_t(cpu_plan[sccl::kPlanKGlobal]);
  const std::vector<int64_t> gpu_global = d_global.read();
  if (!std::equal(cpu_global.begin(), cpu_global.begin() + long(u), gpu_global.begin()))
    return "the union differs from the CPU's";
  return "";
}

}  // namespace

TEST_CASE("gpu union plan equals the cpu plan word for word", "[gpu][indexed]") {
  sccl::GatherPlanParams p;
  p.fingerprint = 0xfeed;
  p.sequence = 9;
  p.nranks = kRanks;
  p.self = 2;
  const auto edited = [&](const std::function<void(uint64_t*)>& edit) {
    std::vector<uint64_t> slots = sccl_test::unionSlots(p.fingerprint, p.sequence);
    edit(slots.data() + sccl::unionSlotWords(kCapacity));  // rank 1's slot
    return slots;
  };
  const std::vector<uint64_t> valid = sccl_test::unionSlots(p.fingerprint, p.sequence);
  CHECK(comparePlans(valid, p) == "");
  struct Case {
    const char* what;
    std::function<void(uint64_t*)> edit;
  };
  const std::vector<Case> cases = {
      {"another call", [](uint64_t* s) { s[sccl::kRecordSequence] += 1; }},
      {"a count above the slot", [](uint64_t* s) { s[sccl::kUnionSlotCount] = kCapacity + 1; }},
      {"non-finite values", [](uint64_t* s) { s[sccl::kRecordNonFinite] = 3; }},
      {"indices out of order",
       [](uint64_t* s) {
         std::swap(s[sccl::kUnionSlotHeaderWords + 10], s[sccl::kUnionSlotHeaderWords + 11]);
       }},
      {"an index one past the vector",
       [](uint64_t* s) { s[sccl::kUnionSlotHeaderWords + s[sccl::kUnionSlotCount] - 1] = kCount; }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::vector<uint64_t> slots = edited(c.edit);
    CHECK(comparePlans(slots, p) == "");  // the statuses: the [resident_gather] unit test
  }
  // Speculative slots: a count past the slot is kPlanOverflow with every count written.
  p.speculative = 1;
  CHECK(comparePlans(edited([](uint64_t* s) { s[sccl::kUnionSlotCount] = kCapacity + 5; }), p) ==
        "");
}
