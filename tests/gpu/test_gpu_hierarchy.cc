// "hierarchy": "node" on device buffers, several ranks on one GPU (CTest gpu_hierarchy_device,
// which sets SCCL_RANKS_PER_NODE=2: the setting is read once per process, so the tag is hidden
// and the GPU bundle runs it in a process of its own). 2 and 4 in-process ranks in nodes of two
// over the in-process transport (device buffers through pinned staging, inside and across
// nodes): for micro, exdyna and topk, float32 and float16, sum and avg, the device run equals the
// host run bit for bit (outputs, the inner residual over each rank's chunk, rank counts, k); the
// bytes across nodes are the inner device call's, whose exchange differs from the host's in form
// (docs/gpu.md), so they are not compared.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "multirank_runs.h"
#include "run_comparison.h"
#include "support/local_ranks.h"

using namespace sccl_gpu_test;

namespace {

constexpr size_t kCount = 30011;  // odd: the reduce-scatter pads the last chunk
const HeadHeavyGradient kGradient{31, kCount, 5};
constexpr int kCalls = 4;

scclSparseConfig_t hierarchical(const char* preset) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = preset;
  config.density = 0.01;
  config.hierarchy = "node";
  return config;
}

}  // namespace

TEST_CASE("hierarchy node on device buffers equals the host run bit for bit", "[.gpu_hierarchy]") {
  const char* per_node = std::getenv("SCCL_RANKS_PER_NODE");
  REQUIRE(per_node != nullptr);
  REQUIRE(std::string(per_node) == "2");
  for (const char* preset : {"micro", "exdyna", "topk"}) {
    for (scclDataType_t dtype : {scclFloat32, scclFloat16}) {
      for (int nranks : {2, 4}) {
        for (scclRedOp_t op : {scclSum, scclAvg}) {
          INFO(preset << " " << (dtype == scclFloat16 ? "float16" : "float32") << " " << nranks
                      << " ranks in nodes of 2, op " << int(op));
          const scclSparseConfig_t config = hierarchical(preset);
          const MultiRankRun host = runMultiRank(nranks, "local", kCount, dtype, config, kCalls,
                                                 kGradient, Buffers::Host, op);
          REQUIRE_NO_RANK_FAILURES(host.failures);
          const MultiRankRun device = runMultiRank(nranks, "local", kCount, dtype, config, kCalls,
                                                   kGradient, Buffers::Device, op);
          REQUIRE_NO_RANK_FAILURES(device.failures);
          const std::string difference = differenceBetween(host, device, false);
          INFO(difference);
          CHECK(difference.empty());
        }
      }
    }
  }
}
