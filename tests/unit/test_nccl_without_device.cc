// The NCCL transport on a machine without a usable GPU (as CI's): creating a communicator fails
// on every rank with an error that names the CUDA problem, and returns instead of hanging. With a
// GPU present the gpu suite (tests/gpu) covers the transport and this test has nothing to check.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "sccl_build_config.h"
#include "sparsecoll/sparsecoll.h"

#if SCCL_BUILD_WITH_NCCL
#include <cuda_runtime_api.h>

TEST_CASE("nccl transport without a usable device fails cleanly on every rank", "[nccl]") {
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  (void)cudaGetLastError();
  if (found == cudaSuccess && devices > 0) {
    SUCCEED("a GPU is present: the gpu suite covers the NCCL transport");
    return;
  }
  scclUniqueId id;
  REQUIRE(scclGetUniqueId(&id) == scclSuccess);
  std::vector<scclResult_t> results(2, scclSuccess);
  std::vector<std::string> messages(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      scclConfig_t config = SCCL_CONFIG_INITIALIZER;
      config.transport = "nccl";
      config.timeoutMs = 10000;
      scclComm_t comm = nullptr;
      results[size_t(r)] = scclCommInitRankConfig(&comm, 2, id, r, &config);
      messages[size_t(r)] = scclGetLastError(nullptr);
      if (results[size_t(r)] == scclSuccess) scclCommDestroy(comm);
    });
  }
  for (auto& rank : ranks) rank.join();
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << messages[size_t(r)]);
    CHECK(results[size_t(r)] != scclSuccess);
    CHECK(results[size_t(r)] != scclTimeout);  // failed at once, no wait for a deadline
    CHECK(!messages[size_t(r)].empty());
  }
  // The rank that failed first names CUDA's error.
  CHECK((messages[0].find("CUDA") != std::string::npos ||
         messages[1].find("CUDA") != std::string::npos));
}
#endif
