// The resident S2 call's kernels on the GPU (cuda/kernels/sketch_plan.cu: a grid pass over a
// bitmap with integer atomics, the decisions in one thread) against the CPU backend's, word for
// word: a union of many blocks (the grid loops) with a partial last block, each refusal (a union
// byte other than 0 or 1 at two blocks, non-finite values, another call), and markedElements.
#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
#include "kernels/kernels.h"
#include "kernels/shared/sketch_plan.h"

using sccl_gpu_test::DeviceBuffer;

namespace {

constexpr size_t kRanks = 5, kBlock = 32, kCount = 26000003;  // 812,501 blocks, the last of 3
constexpr size_t kBlocks = (kCount + kBlock - 1) / kBlock;

std::string comparePlans(const std::vector<uint64_t>& headers, const std::vector<uint8_t>& united,
                         const sccl::GatherPlanParams& p) {
  std::vector<uint64_t> cpu_plan(sccl::sketchPlanWords(kRanks), 0);
  *sccl::sketchPlanScratch(cpu_plan.data(), kRanks).cutoff = 0x3fe0000000000003ull;  // the rank's
  const std::vector<uint64_t> initial = cpu_plan;
  REQUIRE(sccl::cpuKernels().planSketch(headers.data(), p, kCount, kBlock, united.data(),
                                        cpu_plan.data(), nullptr) == scclSuccess);
  sccl::CudaKernels gpu;
  DeviceBuffer<uint64_t> d_headers(headers), d_plan(initial);
  DeviceBuffer<uint8_t> d_union(united);
  REQUIRE(gpu.planSketch(d_headers.get(), p, kCount, kBlock, d_union.get(), d_plan.get(),
                         nullptr) == scclSuccess);
  const std::vector<uint64_t> gpu_plan = d_plan.read();
  for (size_t w = 0; w < cpu_plan.size(); ++w) {
    if (gpu_plan[w] != cpu_plan[w])
      return "plan word " + std::to_string(w) + ": " + std::to_string(gpu_plan[w]) + ", CPU " +
             std::to_string(cpu_plan[w]);
  }
  return "";
}

}  // namespace

TEST_CASE("gpu sketch plan and marked elements equal the cpu ones word for word",
          "[gpu][indexed]") {
  sccl::GatherPlanParams p;
  p.fingerprint = 0x5eed;
  p.sequence = 4;
  p.nranks = kRanks;
  p.self = 3;
  std::mt19937_64 random(11);
  std::vector<uint8_t> united(kBlocks);
  for (size_t b = 0; b < kBlocks; ++b) united[b] = random() % 31 == 0 ? 1 : 0;
  united[kBlocks - 1] = 1;  // the partial block
  std::vector<uint64_t> headers(kRanks * sccl::kSketchHeaderWords, 0);
  for (size_t r = 0; r < kRanks; ++r) {
    uint64_t* h = headers.data() + r * sccl::kSketchHeaderWords;
    h[sccl::kSketchFingerprint] = p.fingerprint;
    h[sccl::kSketchSequence] = p.sequence;
    h[sccl::kSketchElements] = 1000 * r + 3;
  }
  CHECK(comparePlans(headers, united, p) == "");
  uint64_t want = 0;
  REQUIRE(sccl::cpuKernels().markedElements(united.data(), kCount, kBlock, &want, nullptr) ==
          scclSuccess);
  DeviceBuffer<uint8_t> d_union(united);
  DeviceBuffer<uint64_t> got(std::vector<uint64_t>{77});
  REQUIRE(sccl::CudaKernels().markedElements(d_union.get(), kCount, kBlock, got.get(), nullptr) ==
          scclSuccess);
  CHECK(got.read() == std::vector<uint64_t>{want});
  using Edit = std::function<void(std::vector<uint64_t>&, std::vector<uint8_t>&)>;
  const std::vector<std::pair<const char*, Edit>> cases = {
      {"bad bytes at two blocks",
       [](std::vector<uint64_t>&, std::vector<uint8_t>& u) {
         u[kBlocks - 1] = 255;
         u[400017] = 2;
       }},
      {"non-finite values", [](std::vector<uint64_t>& h, std::vector<uint8_t>&) { h[5] = 5; }},
      {"another call", [](std::vector<uint64_t>& h, std::vector<uint8_t>&) { h[7] += 1; }},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    std::vector<uint64_t> h = headers;
    std::vector<uint8_t> u = united;
    c.second(h, u);
    CHECK(comparePlans(h, u, p) == "");  // the statuses: the [sketch_call] unit test
  }
}
