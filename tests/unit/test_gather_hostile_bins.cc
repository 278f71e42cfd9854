// The resident gather call on host buffers when a peer's bins put the density correction's edge
// below the edge this rank's own bins start at (the floor edge), in a call whose candidates
// overflow their room, so that the selection reads the range again. Bins cannot be checked
// (any counts are possible), but every rank's count comes from its own bins: the call must stay
// consistent on every rank (the same result everywhere, each rank's selection the entries its
// count covers) and account for every value (sent once, or left in the residual).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "sparsifier/sparsifier.h"
#include "support/fault_transport.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

namespace {

constexpr int kRanks = 3;
constexpr size_t kCount = 30011;
constexpr int kCalls = 3;

// Call 1 (the hostile one) puts half of the entries in a band of magnitudes just under the
// others' top, far more than the candidates' room of a few times k; calls 0 and 2 are Laplace.
float gradientAt(int rank, int call, size_t i) {
  const float laplace = sccl_test::gradientValue(41, rank, uint64_t(call), i);
  if (call != 1 || i % 2 != 0) return laplace;
  const float band = 0.5f + 0.5f * float((i * 2654435761u + uint64_t(rank) * 97) % 1000) / 1000.f;
  return laplace < 0 ? -band : band;
}

struct RankCall {
  scclResult_t result = scclSuccess;
  std::vector<float> acc, output, residual;
};

}  // namespace

TEST_CASE(
    "resident gather on host buffers: a peer's bins below the floor edge with candidates "
    "that overflow keep every rank's count and selection in agreement",
    "[resident_gather][peerfault]") {
  std::vector<std::vector<RankCall>> calls(kCalls, std::vector<RankCall>(kRanks));
  std::vector<int> fired(kRanks, 0);
  scclConfig_t comm_config = SCCL_CONFIG_INITIALIZER;
  comm_config.timeoutMs = 20000;  // a rank left waiting fails the test instead of hanging it
  const std::vector<std::string> failures = sccl_test::runLocalRanks(
      kRanks,
      [&](int rank, scclComm_t comm, sccl_test::RankLog& log) {
        const scclSparseConfig_t config = sccl_test::sparseConfig("micro", 0.01);
        scclSparsifier_t sp = nullptr;
        if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                             scclSuccess, "create"))
          return;
        const uint64_t k = sp->k_target;
        std::vector<float> grad(kCount), out(kCount);
        sccl_test::FaultTransport* wrapper = nullptr;
        for (int t = 0; t < kCalls; ++t) {
          if (t == 1) {
            // The bins' sum (the call's first all-reduce) as a hostile peer would make it: the
            // lowest bin, which no honest rank counts when candidates are kept, wraps the count
            // from there up to exactly k, so that the edge nearest k is the window's lowest.
            sccl_test::Fault fault;
            fault.op = sccl_test::FaultOp::AllReduce;
            fault.hostile_rank = 1;
            fault.mutate = [k](std::byte* data, size_t bytes) {
              std::vector<uint64_t> bins(bytes / sizeof(uint64_t));
              std::memcpy(bins.data(), data, bins.size() * sizeof(uint64_t));
              uint64_t above = 0;
              for (size_t j = 1; j < bins.size(); ++j) above += bins[j];
              bins[0] = k - above;  // modulo 2^64
              std::memcpy(data, bins.data(), bins.size() * sizeof(uint64_t));
            };
            wrapper = sccl_test::installFault(comm, fault);
          }
          RankCall& record = calls[size_t(t)][size_t(rank)];
          const float* residual = static_cast<const float*>(sp->residual.data());
          for (size_t i = 0; i < kCount; ++i) grad[i] = gradientAt(rank, t, i);
          record.acc.resize(kCount);
          for (size_t i = 0; i < kCount; ++i) record.acc[i] = residual[i] + grad[i];
          record.result = scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum,
                                              sp, comm, nullptr);
          residual = static_cast<const float*>(sp->residual.data());
          record.output = out;
          record.residual.assign(residual, residual + kCount);
          if (record.result != scclSuccess) break;
        }
        fired[size_t(rank)] = wrapper != nullptr ? wrapper->fired() : 0;
        log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
      },
      &comm_config);
  REQUIRE_NO_RANK_FAILURES(failures);
  for (int r = 0; r < kRanks; ++r) CHECK(fired[size_t(r)] == 1);
  for (int t = 0; t < kCalls; ++t) {
    INFO("call " << t);
    for (int r = 0; r < kRanks; ++r) REQUIRE(calls[size_t(t)][size_t(r)].result == scclSuccess);
    // Every value is sent once (zeroed in every rank's residual, summed in rank order into the
    // output) or stays in the residual; the output is the same on every rank.
    size_t sent = 0, wrong_residual = 0, wrong_output = 0;
    for (size_t i = 0; i < kCount; ++i) {
      const bool selected = calls[size_t(t)][0].residual[i] == 0.0f;
      sent += selected;
      float sum = 0;
      for (int r = 0; r < kRanks; ++r) {
        const RankCall& c = calls[size_t(t)][size_t(r)];
        sum = !selected ? 0.0f : r == 0 ? c.acc[i] : sum + c.acc[i];
        wrong_residual += c.residual[i] != (selected ? 0.0f : c.acc[i]);
      }
      for (int r = 0; r < kRanks; ++r)
        wrong_output += std::memcmp(&calls[size_t(t)][size_t(r)].output[i], &sum, sizeof sum) != 0;
    }
    CHECK(wrong_residual == 0);
    CHECK(wrong_output == 0);
    CHECK(sent > 0);
  }
}
