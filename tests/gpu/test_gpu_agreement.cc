// Call agreement on the GPU paths (comm/call_agreement.h): the mismatched calls of
// tests/support/agreement_cases.h over NCCL (one rank per GPU; needs two GPUs), and device
// buffers over the in-process transport (the pinned staging adapter hands the folded agreement
// to the host transport; several ranks on GPU 0). Every rank must get scclInvalidUsage with the
// same message, and the communicator must work afterwards.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "device_buffer.h"
#include "gpu_ranks.h"
#include "support/agreement_cases.h"

using namespace sccl_gpu_test;

TEST_CASE("nccl: mismatched calls are refused on every rank", "[gpu][nccl][agreement]") {
  const int nranks = gpuRankCount();
  if (nranks < 2) {
    WARN("one GPU: the NCCL agreement cases need two ranks, one per GPU");
    return;
  }
  for (const sccl_test::AgreementCase& c : sccl_test::denseAgreementCases()) {
    if (nranks < c.min_ranks) continue;
    INFO(c.name << " on " << nranks << " GPUs");
    std::vector<std::string> messages(static_cast<size_t>(nranks));
    auto failures = onEveryGpu(nranks, [&](int rank, scclComm_t comm) {
      return sccl_test::runAgreementCase(c, rank, comm, &messages[size_t(rank)]);
    });
    for (int r = 1; r < nranks; ++r) {
      if (messages[size_t(r)] != messages[0]) failures.push_back("messages differ: " + messages[0]);
    }
    for (const std::string& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
  }
}

TEST_CASE("device buffers over the in-process transport: mismatched counts are refused",
          "[gpu][multirank_device][agreement]") {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.transport = "local";
  config.timeoutMs = 60000;
  for (int nranks : {2, 3}) {
    INFO(nranks << " ranks on GPU 0");
    std::vector<std::string> messages(static_cast<size_t>(nranks));
    auto failures = onRankThreads(
        nranks, config, [](int) { return 0; },
        [&](int rank, scclComm_t comm) -> std::string {
          const size_t count = rank == 0 ? 8 : 16;
          DeviceBuffer<float> send(std::vector<float>(16, 1.0f)), recv(16);
          const scclResult_t got =
              scclAllReduce(send.get(), recv.get(), count, scclFloat32, scclSum, comm, nullptr);
          messages[size_t(rank)] = scclGetLastError(comm);
          if (got != scclInvalidUsage)
            return std::string("returned ") + scclGetErrorString(got) + ": " +
                   messages[size_t(rank)];
          if (messages[size_t(rank)].find("count is 8 on rank(s) 0 but 16") == std::string::npos)
            return "unexpected message: " + messages[size_t(rank)];
          // Matched, on device buffers: the sum of rank + 1.
          send.write(std::vector<float>(16, float(rank + 1)));
          if (scclAllReduce(send.get(), recv.get(), 16, scclFloat32, scclSum, comm, nullptr) !=
              scclSuccess)
            return std::string("matched all-reduce: ") + scclGetLastError(comm);
          for (float v : recv.read()) {
            if (v != float(nranks * (nranks + 1) / 2)) return "wrong sum " + std::to_string(v);
          }
          return sccl_test::checkStillUsable(rank, comm);
        });
    for (int r = 1; r < nranks; ++r) {
      if (messages[size_t(r)] != messages[0]) failures.push_back("messages differ: " + messages[0]);
    }
    for (const std::string& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
  }
}
