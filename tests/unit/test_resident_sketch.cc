// The device-resident S2 call (algorithms/resident_sketch.cc) on the fake device (harness
// support/fake_gather_runs.h): the host run's outputs and residuals bit for bit at 1-4 ranks,
// every gradient type, both block selections and both residual rules; one plan read back and one
// wait per call; the non-finite policies and hostile records refused at the call on every rank
// with recvbuf untouched; the plan's decisions on their own.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/shared/sketch_plan.h"
#include "support/fake_gather_runs.h"

using namespace sccl_test;

namespace {

scclSparseConfig_t s2Config(int block, const char* selection, const char* feedback) {
  scclSparseConfig_t config = sparseConfig("s2", 0.01);
  config.sketchBlockSize = block;
  config.sketchBlockSelection = selection;
  config.sketchFeedback = feedback;
  return config;
}

}  // namespace

TEST_CASE("resident S2 equals the host run bit for bit", "[resident_sketch]") {
  // 20011 elements: a partial last block at every block size below.
  const size_t count = 20011;
  for (int nranks : {1, 2, 3, 4}) {
    requireSameAsHost("s2", nranks, count, sparseConfig("s2", 0.01), 4, skewed(), scclSum,
                      Collectives::OnStream);
    requireSameAsHost("s2", nranks, count, sparseConfig("s2", 0.01), 3, skewed(), scclAvg,
                      Collectives::Staged);
  }
  for (const char* selection : {"topk", "nonzero"}) {
    for (const char* feedback : {"unselected", "decode_error"}) {
      INFO(selection << ", " << feedback);
      requireSameAsHost("s2 variant", 3, count, s2Config(64, selection, feedback), 4, skewed(),
                        scclAvg, Collectives::OnStream);
    }
  }
  // Sparse gradients: "nonzero" marks what holds a value, and its table follows the counts.
  const GradientFn sparse = [](int r, uint64_t t, size_t i) {
    return (i * 7 + size_t(r) * 3 + t) % 29 == 0 ? gradientValue(53, r, t, i) : 0.0f;
  };
  requireSameAsHost("s2 nonzero, sparse", 4, count, s2Config(16, "nonzero", "unselected"), 4,
                    sparse, scclSum, Collectives::OnStream);
  const TypedGradientFn typed = [](int r, uint64_t t, size_t i) {
    return double(gradientValue(47, r, t, i)) * (i < 3000 ? 4.0 : 1.0);
  };
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    requireTypedSameAsHost("s2", 3, 12007, dtype, sparseConfig("s2", 0.01), 3, typed, scclAvg,
                           Collectives::OnStream);
  }
}

TEST_CASE("resident S2 reads back one plan and waits once per call", "[resident_sketch]") {
  const size_t count = 20011;
  for (int nranks : {1, 4}) {
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      INFO(nranks << " ranks, " << (how == Collectives::OnStream ? "on the stream" : "staged"));
      FakeRun run = runOnFake(nranks, count, sparseConfig("s2", 0.01), 3, skewed(), scclSum, how);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      REQUIRE(run.resident);
      CHECK(run.violations.empty());
      for (size_t t = 0; t < 3; ++t) {
        for (size_t r = 0; r < size_t(nranks); ++r) {
          INFO("call " << t << " rank " << r);
          const CallCounts& c = run.counts[t][r];
          if (how == Collectives::OnStream) {
            CHECK(c.to_host == 1);
            CHECK(c.to_host_bytes == 64 + 16 * uint64_t(nranks));
            CHECK(c.waits == 1);
          } else {  // the plan, and the record all-gather and table all-reduce staged
            CHECK(c.to_host == 3);
            CHECK(c.waits == 3);
          }
        }
      }
    }
  }
}

TEST_CASE("resident S2 applies the non-finite policies and refuses hostile records at the call",
          "[resident_sketch]") {
  const size_t count = 20011;
  const int nranks = 3;
  SECTION("non-finite values: the host's policies, decided before anything is written") {
    const GradientFn poisoned = [](int r, uint64_t t, size_t i) {
      if (r == 2 && t == 1 && i == 99) return std::numeric_limits<float>::quiet_NaN();
      return gradientValue(37, r, t, i);
    };
    requireSameAsHost("s2, propagate", nranks, count, sparseConfig("s2", 0.01), 3, poisoned,
                      scclSum, Collectives::OnStream);
    scclSparseConfig_t error = sparseConfig("s2", 0.01);
    error.nonFinite = scclNonFiniteError;
    requireSameAsHost("s2, error", nranks, count, error, 3, poisoned, scclSum,
                      Collectives::OnStream);
  }
  struct Case {
    const char* what;
    std::function<void(uint64_t* record)> edit;  // rank 1's record
    scclResult_t result;
    const char* says;  // what the error text names
  };
  const std::vector<Case> cases = {
      {"a bitmap byte of 2",
       [](uint64_t* w) { reinterpret_cast<uint8_t*>(w + sccl::kGatherRecordHeaderWords)[5] = 2; },
       scclRemoteError, "bitmap"},
      {"a bitmap byte of 255 in the last block",
       [](uint64_t* w) {
         const size_t blocks = (count + 31) / 32;
         reinterpret_cast<uint8_t*>(w + sccl::kGatherRecordHeaderWords)[blocks - 1] = 255;
       },
       scclRemoteError, "bitmap"},
      {"another call", [](uint64_t* w) { w[sccl::kRecordSequence] += 1; }, scclInvalidUsage,
       "mismatched"},
      {"another config", [](uint64_t* w) { w[sccl::kRecordFingerprint] ^= 1; }, scclInvalidUsage,
       "mismatched"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FakeRun run = runOnFake(nranks, count, s2Config(32, "topk", "unselected"), 3, skewed(), scclSum,
                            Collectives::OnStream,
                            [&](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 0) return;
                              const size_t record = bytes / sizeof(uint64_t) / nranks;
                              c.edit(static_cast<uint64_t*>(data) + record);
                            });
    REQUIRE_NO_RANK_FAILURES(run.failures);
    CHECK(run.violations.empty());
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[0][r].result == scclSuccess);
      CHECK(run.calls[1][r].result == c.result);
      CHECK(run.counts[1][r].error.find(c.says) != std::string::npos);
      CHECK(run.counts[1][r].error.find("rank 1") != std::string::npos);
      CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));  // untouched
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);            // kept
      CHECK(run.calls[2][r].result == scclSuccess);  // the sparsifier stays usable
    }
  }
}

TEST_CASE("the sketch plan unions the bitmaps, counts the elements and refuses bad records",
          "[resident_sketch]") {
  using namespace sccl;
  // 4 ranks, 103 elements in blocks of 10: 11 blocks, the last of 3 elements.
  constexpr size_t kRanks = 4, kCount = 103, kBlock = 10, kBlocks = 11;
  GatherPlanParams p;
  p.fingerprint = 0xabc;
  p.sequence = 7;
  p.nranks = kRanks;
  p.self = 1;
  const size_t words = sketchRecordWords(kBlocks);
  std::vector<uint64_t> valid(kRanks * words, 0);
  const std::vector<std::vector<size_t>> marked = {{0, 3}, {3, 10}, {}, {5, 6, 10}};
  for (size_t r = 0; r < kRanks; ++r) {
    uint64_t* record = valid.data() + r * words;
    record[kRecordFingerprint] = p.fingerprint;
    record[kRecordSequence] = p.sequence;
    record[kRecordReserved] = 0x4010000000000000ull + r;  // each rank's cut-off bits
    for (size_t b : marked[r]) reinterpret_cast<uint8_t*>(record + kGatherRecordHeaderWords)[b] = 1;
  }
  const auto plan_of = [&](const std::vector<uint64_t>& records, std::vector<uint8_t>* global) {
    std::vector<uint64_t> plan(sketchPlanWords(kRanks), 0xdead);
    global->assign(kBlocks, 9);
    REQUIRE(cpuKernels().planSketch(records.data(), p, kCount, kBlock, global->data(), plan.data(),
                                    nullptr) == scclSuccess);
    return plan;
  };
  std::vector<uint8_t> global;
  const std::vector<uint64_t> plan = plan_of(valid, &global);
  REQUIRE(plan[kPlanStatus] == kPlanOk);
  CHECK(global == std::vector<uint8_t>{1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1});
  // Marked elements: 20, 13 (block 10 holds 3), 0, 23; the union 0, 3, 5, 6, 10: 43.
  const std::vector<uint64_t> counts = {20, 13, 0, 23};
  for (size_t r = 0; r < kRanks; ++r) CHECK(plan[kGatherPlanHeaderWords + 2 * r] == counts[r]);
  CHECK(plan[kPlanMaxK] == 23);
  CHECK(plan[kPlanKGlobal] == 43);
  CHECK(plan[kPlanEdge] == 0x4010000000000001ull);  // this rank's cut-off
  struct Case {
    const char* what;
    std::function<void(std::vector<uint64_t>&)> edit;
    uint64_t status;
    uint64_t rank;
  };
  const auto bitmap_of = [&](std::vector<uint64_t>& records, size_t r) {
    return reinterpret_cast<uint8_t*>(records.data() + r * words + kGatherRecordHeaderWords);
  };
  const std::vector<Case> cases = {
      {"a byte of 2", [&](std::vector<uint64_t>& x) { bitmap_of(x, 2)[4] = 2; }, kPlanBadBitmap, 2},
      {"bytes of 3 on two ranks: the lower named",
       [&](std::vector<uint64_t>& x) {
         bitmap_of(x, 3)[0] = 3;
         bitmap_of(x, 1)[10] = 3;
       },
       kPlanBadBitmap, 1},
      {"non-finite values come before a bad byte",
       [&](std::vector<uint64_t>& x) {
         bitmap_of(x, 1)[0] = 7;
         x[3 * words + kRecordNonFinite] = 2;
       },
       kPlanNonFinite, 3},
      {"another call comes first",
       [&](std::vector<uint64_t>& x) {
         x[2 * words + kRecordNonFinite] = 2;
         x[3 * words + kRecordSequence] = 8;
       },
       kPlanMismatch, 3},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<uint64_t> records = valid;
    c.edit(records);
    const std::vector<uint64_t> refused = plan_of(records, &global);
    CHECK(refused[kPlanStatus] == c.status);
    CHECK(refused[kPlanRank] == c.rank);
  }
}
