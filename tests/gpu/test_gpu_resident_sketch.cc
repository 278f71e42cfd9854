// The resident S2 call's plan on the GPU (cuda/kernels/sketch_plan.cu: grid passes over the
// gathered bitmaps, the decisions in one thread) against the CPU backend's, word for word and
// bitmap for bitmap: many blocks (the grid loops), a partial last block, and each refusal (a
// bitmap byte other than 0 or 1 on two ranks, non-finite values, another call).
#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
#include "kernels/kernels.h"
#include "kernels/shared/sketch_plan.h"

using sccl_gpu_test::DeviceBuffer;

namespace {

constexpr size_t kRanks = 5, kBlock = 32, kCount = 26000003;  // 812,501 blocks, the last of 3
constexpr size_t kBlocks = (kCount + kBlock - 1) / kBlock;

std::string comparePlans(const std::vector<uint64_t>& records, const sccl::GatherPlanParams& p) {
  std::vector<uint64_t> cpu_plan(sccl::sketchPlanWords(kRanks));
  std::vector<uint8_t> cpu_union(kBlocks);
  REQUIRE(sccl::cpuKernels().planSketch(records.data(), p, kCount, kBlock, cpu_union.data(),
                                        cpu_plan.data(), nullptr) == scclSuccess);
  sccl::CudaKernels gpu;
  DeviceBuffer<uint64_t> d_records(records), d_plan(cpu_plan.size());
  DeviceBuffer<uint8_t> d_union(std::vector<uint8_t>(kBlocks, 7));
  REQUIRE(gpu.planSketch(d_records.get(), p, kCount, kBlock, d_union.get(), d_plan.get(),
                         nullptr) == scclSuccess);
  const std::vector<uint64_t> gpu_plan = d_plan.read();
  for (size_t w = 0; w < sccl::gatherPlanWords(kRanks); ++w) {
    if (gpu_plan[w] != cpu_plan[w])
      return "plan word " + std::to_string(w) + ": " + std::to_string(gpu_plan[w]) + ", CPU " +
             std::to_string(cpu_plan[w]);
  }
  if (d_union.read() != cpu_union) return "the union differs from the CPU's";
  return "";
}

}  // namespace

TEST_CASE("gpu sketch plan equals the cpu plan word for word", "[gpu][indexed]") {
  sccl::GatherPlanParams p;
  p.fingerprint = 0x5eed;
  p.sequence = 4;
  p.nranks = kRanks;
  p.self = 3;
  const size_t words = sccl::sketchRecordWords(kBlocks);
  std::vector<uint64_t> valid(kRanks * words, 0);
  std::mt19937_64 random(11);
  for (size_t r = 0; r < kRanks; ++r) {
    uint64_t* record = valid.data() + r * words;
    record[sccl::kRecordFingerprint] = p.fingerprint;
    record[sccl::kRecordSequence] = p.sequence;
    record[sccl::kRecordReserved] = 0x3fe0000000000000ull + r;
    auto* bitmap = reinterpret_cast<uint8_t*>(record + sccl::kGatherRecordHeaderWords);
    for (size_t b = 0; b < kBlocks; ++b) bitmap[b] = random() % 97 == 0 ? 1 : 0;
    bitmap[kBlocks - 1] = r == 2 ? 1 : 0;  // the partial block, on one rank
  }
  CHECK(comparePlans(valid, p) == "");
  const auto bitmap_of = [&](std::vector<uint64_t>& x, size_t r) {
    return reinterpret_cast<uint8_t*>(x.data() + r * words + sccl::kGatherRecordHeaderWords);
  };
  const std::vector<std::pair<const char*, std::function<void(std::vector<uint64_t>&)>>> cases = {
      {"bad bytes on two ranks",
       [&](std::vector<uint64_t>& x) {
         bitmap_of(x, 4)[17] = 2;
         bitmap_of(x, 1)[kBlocks - 1] = 255;
       }},
      {"non-finite values", [&](std::vector<uint64_t>& x) { x[2 * words + 2] = 5; }},
      {"another call", [&](std::vector<uint64_t>& x) { x[words + 1] += 1; }},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    std::vector<uint64_t> records = valid;
    c.second(records);
    CHECK(comparePlans(records, p) == "");  // the statuses: the [resident_sketch] unit test
  }
}
