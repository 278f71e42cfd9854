// The device-resident union call (algorithms/resident_union.cc: topk, hard_threshold, sidco and
// the other threshold estimators over a search space the ranks share) on the fake device
// (harness support/fake_gather_runs.h): the host run's outputs and residuals bit for bit at 1-4
// ranks and every gradient type, one plan read back per call (a threshold's speculative slot:
// two at a call whose counts outgrow it), the non-finite policies, hostile slots refused at the
// call on every rank with recvbuf untouched, and the plan's refusals on their own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "support/fake_gather_runs.h"
#include "support/union_slots.h"

using namespace sccl_test;

TEST_CASE("resident top-k (the union call) equals the host run bit for bit", "[resident_union]") {
  // Every rank's exact top-k over the whole vector, the sorted union as the global list.
  const size_t count = 20011;
  const scclSparseConfig_t config = sparseConfig("topk", 0.01);
  for (int nranks : {1, 2, 3, 4}) {
    requireSameAsHost("topk", nranks, count, config, 5, skewed(), scclSum, Collectives::OnStream);
    requireSameAsHost("topk", nranks, count, config, 4, skewed(), scclAvg, Collectives::Staged);
  }
  const TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
    // Coarse values: many ties at the k-th magnitude, broken by index on every rank alike.
    return std::round(double(gradientValue(31, r, t, i)) * 4.0) / 4.0;
  };
  for (scclDataType_t dtype : {scclFloat32, scclFloat16, scclBfloat16, scclFloat64}) {
    requireTypedSameAsHost("topk", 3, 12007, dtype, config, 4, gradient, scclAvg,
                           Collectives::OnStream);
  }
  // A density that selects the whole vector: every rank sends every index.
  requireSameAsHost("topk, density 1", 2, 3001, sparseConfig("topk", 1.0), 3, skewed(), scclSum,
                    Collectives::OnStream);
}

TEST_CASE("exclusive searches with a fitted estimator run the union call resident",
          "[resident_union]") {
  // MiCRO's and ExDyna's partitions with top-k or a threshold fitted to the data (the resident
  // gather takes only thresholds known before the data): disjoint slices whose union is their
  // merge, one plan read back per call for top-k, bit for bit the host run at 2-4 ranks.
  const size_t count = 20011;
  for (const char* preset : {"micro", "exdyna"}) {
    for (const char* estimator : {"topk", "sidco_exp", "gaussiank"}) {
      scclSparseConfig_t config = sparseConfig(preset, 0.01);
      config.estimator = estimator;
      for (int nranks : {2, 4}) {
        INFO(preset << " with " << estimator << ", " << nranks << " ranks");
        requireSameAsHost(estimator, nranks, count, config, 4, skewed(), scclSum,
                          Collectives::OnStream);
      }
      requireSameAsHost(estimator, 3, count, config, 3, skewed(), scclAvg, Collectives::Staged);
    }
    scclSparseConfig_t config = sparseConfig(preset, 0.01);
    config.estimator = "topk";
    FakeRun run = runOnFake(4, count, config, 4, skewed(), scclSum, Collectives::OnStream);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    REQUIRE(run.resident);
    CHECK(run.violations.empty());
    for (size_t t = 0; t < 4; ++t) {
      for (size_t r = 0; r < 4; ++r) {
        INFO(preset << " call " << t << " rank " << r);
        CHECK(run.counts[t][r].to_host == 1);
        CHECK(run.counts[t][r].to_host_bytes == 64 + 16 * 4);
        CHECK(run.counts[t][r].waits == 1);
      }
    }
  }
}

TEST_CASE("resident top-k reads back one plan and waits once per call", "[resident_union]") {
  const size_t count = 20011;
  for (int nranks : {1, 4}) {
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      INFO(nranks << " ranks, " << (how == Collectives::OnStream ? "on the stream" : "staged"));
      FakeRun run = runOnFake(nranks, count, sparseConfig("topk", 0.01), 4, skewed(), scclSum, how);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      REQUIRE(run.resident);
      CHECK(run.violations.empty());
      for (size_t t = 0; t < 4; ++t) {
        for (size_t r = 0; r < size_t(nranks); ++r) {
          INFO("call " << t << " rank " << r);
          const CallCounts& c = run.counts[t][r];
          // The plan; staged, each of the two collectives' send bytes too (one wait each).
          const uint64_t plan_bytes = 64 + 16 * uint64_t(nranks);
          if (how == Collectives::OnStream) {
            CHECK(c.to_host == 1);
            CHECK(c.to_host_bytes == plan_bytes);
            CHECK(c.waits == 1);
          } else {
            CHECK(c.to_host == 3);
            CHECK(c.waits == 3);
          }
        }
      }
    }
  }
}

TEST_CASE("resident top-k applies the non-finite policies and refuses hostile peers at the call",
          "[resident_union]") {
  const size_t count = 20011;
  const int nranks = 3;
  SECTION("non-finite values: the host's policies, decided before anything is written") {
    const GradientFn poisoned = [](int r, uint64_t t, size_t i) {
      if (r == 2 && t == 1 && i == 99) return std::numeric_limits<float>::infinity();
      return gradientValue(37, r, t, i);
    };
    requireSameAsHost("topk, propagate", nranks, count, sparseConfig("topk", 0.01), 3, poisoned,
                      scclSum, Collectives::OnStream);
    scclSparseConfig_t error = sparseConfig("topk", 0.01);
    error.nonFinite = scclNonFiniteError;
    requireSameAsHost("topk, error", nranks, count, error, 3, poisoned, scclSum,
                      Collectives::OnStream);
  }
  struct Case {
    const char* what;
    std::function<void(uint64_t* words, size_t slot)> edit;  // rank 1's slot at words + slot
    scclResult_t result;
    const char* says;  // what the error text names
  };
  const std::vector<Case> cases = {
      {"an index outside the vector",
       [](uint64_t* w, size_t slot) { w[slot + sccl::kUnionSlotHeaderWords] = uint64_t(-3); },
       scclRemoteError, "index"},
      {"indices out of order",
       [](uint64_t* w, size_t slot) {
         std::swap(w[slot + sccl::kUnionSlotHeaderWords],
                   w[slot + sccl::kUnionSlotHeaderWords + 1]);
       },
       scclRemoteError, "out of order"},
      {"a count above its slot",
       [](uint64_t* w, size_t slot) { w[slot + sccl::kUnionSlotCount] += 1; }, scclRemoteError,
       "claims"},
      {"a count of 2^64 - 1",
       [](uint64_t* w, size_t slot) { w[slot + sccl::kUnionSlotCount] = ~uint64_t{0}; },
       scclRemoteError, "claims"},
      {"another call", [](uint64_t* w, size_t slot) { w[slot + sccl::kRecordSequence] += 1; },
       scclInvalidUsage, "mismatched"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FakeRun run = runOnFake(nranks, count, sparseConfig("topk", 0.01), 3, skewed(), scclSum,
                            Collectives::OnStream,
                            [&](int call, size_t collective, int, void* data, size_t bytes) {
                              if (call != 1 || collective != 0) return;
                              const size_t slot = bytes / sizeof(uint64_t) / nranks;
                              c.edit(static_cast<uint64_t*>(data), slot);
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
    }
  }
}

TEST_CASE("resident hard threshold and SIDCo (the union call with counts from the data)",
          "[resident_union]") {
  // The counts come from the data: the slots are sized speculatively from the previous call's
  // counts, and the one plan read back sizes the value all-reduce; SIDCo's estimator reads its
  // fits' moments back as on the staged path, and its count check's threshold comes back in the
  // plan.
  const size_t count = 20011;
  for (const char* preset : {"hard_threshold", "sidco"}) {
    for (int nranks : {1, 2, 3, 4}) {
      requireSameAsHost(preset, nranks, count, sparseConfig(preset, 0.01), 4, skewed(), scclSum,
                        Collectives::OnStream);
      requireSameAsHost(preset, nranks, count, sparseConfig(preset, 0.01), 3, skewed(), scclAvg,
                        Collectives::Staged);
    }
  }
  for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat64}) {
    const TypedGradientFn gradient = [](int r, uint64_t t, size_t i) {
      return double(gradientValue(43, r, t, i)) * (i < 2000 ? 5.0 : 1.0);
    };
    requireTypedSameAsHost("hard_threshold", 3, 12007, dtype, sparseConfig("hard_threshold", 0.01),
                           3, gradient, scclAvg, Collectives::OnStream);
    // SIDCo's count check on the accumulator type's patterns (float64: 52-bit mantissas).
    requireTypedSameAsHost("sidco", 2, 12007, dtype, sparseConfig("sidco", 0.01), 3, gradient,
                           scclSum, Collectives::OnStream);
  }
  // The other threshold estimators over the whole vector take the same call, DGC too: where its
  // sample let more than 4k/3 through (a choice per call and rank) it selects the exact top-k
  // into the same slot, so the ranks still take the same collectives.
  for (const char* estimator : {"dgc", "redsync", "gaussiank"}) {
    scclSparseConfig_t config = sparseConfig("topk", 0.01);
    config.estimator = estimator;
    requireSameAsHost(estimator, 3, count, config, 5, skewed(), scclSum, Collectives::OnStream);
  }
  scclSparseConfig_t dgc_trim = sparseConfig("topk", 0.05);
  dgc_trim.estimator = "dgc";
  dgc_trim.dgcSampleRatio = 0.02;
  for (int nranks : {1, 3}) {
    requireSameAsHost("dgc density 0.05 sample ratio 0.02", nranks, count, dgc_trim, 4, skewed(),
                      scclSum, Collectives::OnStream);
    requireSameAsHost("dgc density 0.05 sample ratio 0.02", nranks, count, dgc_trim, 3, skewed(),
                      scclAvg, Collectives::Staged);
  }
  SECTION("one read-back and one wait per call; staged, one wait per collective more") {
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      FakeRun run =
          runOnFake(4, count, sparseConfig("hard_threshold", 0.01), 3, skewed(), scclSum, how);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      REQUIRE(run.resident);
      // Call 0 sizes its slots from k alone (twice k), which a fixed threshold's count here
      // exceeds: one more exchange (below); later calls from the counts before.
      for (size_t r = 0; r < 4; ++r)
        CHECK(run.counts[0][r].to_host == (how == Collectives::OnStream ? 2 : 5));
      for (size_t t = 1; t < 3; ++t) {
        for (size_t r = 0; r < 4; ++r) {
          INFO("call " << t << " rank " << r);
          const CallCounts& c = run.counts[t][r];
          if (how == Collectives::OnStream) {
            CHECK(c.to_host == 1);
            CHECK(c.to_host_bytes == 64 + 16 * 4);
            CHECK(c.waits == 1);
          } else {  // the plan, and the slot all-gather and value all-reduce staged
            CHECK(c.to_host == 3);
            CHECK(c.waits == 3);
          }
        }
      }
    }
  }
  SECTION("SIDCo with non-finite values: the host's policies, its threshold from the device") {
    const GradientFn poisoned = [](int r, uint64_t t, size_t i) {
      if (r == 1 && t == 1 && i == 77) return std::numeric_limits<float>::quiet_NaN();
      return gradientValue(47, r, t, i);
    };
    requireSameAsHost("sidco, propagate", 3, count, sparseConfig("sidco", 0.01), 4, poisoned,
                      scclSum, Collectives::OnStream);
    scclSparseConfig_t error = sparseConfig("sidco", 0.01);
    error.nonFinite = scclNonFiniteError;
    requireSameAsHost("sidco, error", 3, count, error, 4, poisoned, scclSum, Collectives::OnStream);
  }
  SECTION("SIDCo: its moments and the plan read back, the count check decided on the device") {
    // One fitted stage (M starts at 1): the first stage's moments (64 bytes) and the plan; the
    // count check's bins stay on the device, its threshold comes back in the plan.
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      FakeRun run = runOnFake(4, count, sparseConfig("sidco", 0.01), 4, skewed(), scclSum, how);
      REQUIRE_NO_RANK_FAILURES(run.failures);
      REQUIRE(run.resident);
      for (size_t t = 1; t < 4; ++t) {
        for (size_t r = 0; r < 4; ++r) {
          INFO("call " << t << " rank " << r);
          const CallCounts& c = run.counts[t][r];
          if (how == Collectives::OnStream) {
            CHECK(c.to_host == 2);
            CHECK(c.to_host_bytes == 64 + (64 + 16 * 4));
            CHECK(c.waits == 2);
          } else {  // and the slot all-gather and value all-reduce staged
            CHECK(c.to_host == 4);
            CHECK(c.waits == 4);
          }
        }
      }
    }
  }
  SECTION("a count past the speculative slot: one more slot exchange, the host run's output") {
    // From call 2 a third of the entries grow 40-fold: far more pass the fixed threshold than
    // the slot sized from call 1's counts holds.
    const GradientFn jumping = [](int r, uint64_t t, size_t i) {
      return gradientValue(41, r, t, i) * (t >= 2 && i % 3 == 0 ? 40.0f : 1.0f);
    };
    const scclSparseConfig_t config = sparseConfig("hard_threshold", 0.01);
    for (int nranks : {1, 3}) {
      requireSameAsHost("hard_threshold, jumping counts", nranks, count, config, 4, jumping,
                        scclSum, Collectives::OnStream);
    }
    requireSameAsHost("hard_threshold, jumping counts", 2, count, config, 4, jumping, scclAvg,
                      Collectives::Staged);
    FakeRun run = runOnFake(3, count, config, 4, jumping, scclSum, Collectives::OnStream);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < 3; ++r) {
      INFO("rank " << r);
      CHECK(run.counts[2][r].to_host == 2);  // the overflow, then the exact slots
      CHECK(run.counts[2][r].to_host_bytes == 2 * (64 + 16 * 3));
      CHECK(run.counts[2][r].waits == 2);
      CHECK(run.counts[3][r].to_host == 1);  // sized from call 2's counts
    }
  }
  SECTION("a peer claiming more than its slot holds costs one exchange, not a wrong answer") {
    const int nranks = 3;
    const scclSparseConfig_t config = sparseConfig("hard_threshold", 0.01);
    FakeRun clean = runOnFake(nranks, count, config, 3, skewed(), scclSum, Collectives::OnStream);
    FakeRun run = runOnFake(nranks, count, config, 3, skewed(), scclSum, Collectives::OnStream,
                            [&](int call, size_t c, int, void* data, size_t bytes) {
                              if (call != 1 || c != 0) return;  // the first slot exchange
                              auto* w = static_cast<uint64_t*>(data);
                              const size_t each = bytes / sizeof(uint64_t) / nranks;
                              w[each + sccl::kUnionSlotCount] = count;  // all of its range
                            });
    REQUIRE_NO_RANK_FAILURES(clean.failures);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r);
      CHECK(run.calls[1][r].result == scclSuccess);
      CHECK(run.counts[1][r].to_host == 2);
      CHECK(run.calls[1][r].output == clean.calls[1][r].output);
      CHECK(run.calls[2][r].output == clean.calls[2][r].output);
      CHECK(run.calls[2][r].residual == clean.calls[2][r].residual);
    }
  }
  SECTION("a slot claiming more than the vector, and a slot index out of range") {
    const int nranks = 3;
    for (bool bad_count : {true, false}) {
      INFO((bad_count ? "bad count" : "bad index"));
      FakeRun run =
          runOnFake(nranks, count, sparseConfig("hard_threshold", 0.01), 3, skewed(), scclSum,
                    Collectives::OnStream, [&](int call, size_t c, int, void* data, size_t bytes) {
                      if (call != 1 || c != 0) return;
                      auto* w = static_cast<uint64_t*>(data);
                      const size_t each = bytes / sizeof(uint64_t) / nranks;  // rank 1's at each
                      if (bad_count) {
                        w[each + sccl::kUnionSlotCount] = count + 1;
                      } else {
                        w[each + sccl::kUnionSlotHeaderWords] = count;  // one past the end
                      }
                    });
      REQUIRE_NO_RANK_FAILURES(run.failures);
      for (size_t r = 0; r < size_t(nranks); ++r) {
        INFO("rank " << r);
        CHECK(run.calls[1][r].result == scclRemoteError);
        CHECK(run.counts[1][r].error.find("rank 1") != std::string::npos);
        CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));
        CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
      }
    }
  }
}

TEST_CASE("the union plan refuses each bad slot naming the rank", "[resident_union]") {
  // The CPU plan the GPU test (tests/gpu/test_gpu_resident_union.cc) compares the CUDA one with.
  using namespace sccl;
  GatherPlanParams p;
  p.fingerprint = 0xfeed;
  p.sequence = 9;
  p.nranks = kUnionRanks;
  p.self = 2;
  std::vector<uint64_t> ranges(2 * kUnionRanks);
  for (size_t r = 0; r < kUnionRanks; ++r) ranges[2 * r + 1] = kUnionCount;
  const auto plan_of = [&](const std::vector<uint64_t>& slots, std::vector<int64_t>* global) {
    std::vector<uint64_t> plan(gatherPlanWords(kUnionRanks));
    global->assign(kUnionRanks * kUnionCapacity, -7);
    REQUIRE(cpuKernels().planUnion(slots.data(), p, kUnionCapacity, ranges.data(), global->data(),
                                   plan.data(), nullptr) == scclSuccess);
    return plan;
  };
  const std::vector<uint64_t> valid = unionSlots(p.fingerprint, p.sequence);
  std::vector<int64_t> global;
  const std::vector<uint64_t> plan = plan_of(valid, &global);
  REQUIRE(plan[kPlanStatus] == kPlanOk);
  std::vector<int64_t> want;
  for (size_t r = 0; r < kUnionRanks; ++r) {
    const uint64_t* slot = valid.data() + r * unionSlotWords(kUnionCapacity);
    for (uint64_t j = 0; j < slot[kUnionSlotCount]; ++j)
      want.push_back(int64_t(slot[kUnionSlotHeaderWords + j]));
  }
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  REQUIRE(plan[kPlanKGlobal] == want.size());
  CHECK(std::equal(want.begin(), want.end(), global.begin()));
  CHECK(plan[kPlanEdge] == 0x3f000002u);  // this rank's k-th pattern
  CHECK(plan[kPlanMaxK] == kUnionCapacity);
  struct Case {
    const char* what;
    std::function<void(uint64_t*)> edit;
    uint64_t status;
  };
  const std::vector<Case> cases = {
      {"another call", [](uint64_t* s) { s[kRecordSequence] += 1; }, kPlanMismatch},
      {"a count above the slot", [](uint64_t* s) { s[kUnionSlotCount] = kUnionCapacity + 1; },
       kPlanTooMany},
      {"non-finite values", [](uint64_t* s) { s[kRecordNonFinite] = 3; }, kPlanNonFinite},
      {"non-finite values and a count above the slot",
       [](uint64_t* s) {
         s[kRecordNonFinite] = 3;
         s[kUnionSlotCount] = kUnionCapacity + 1;
       },
       kPlanTooMany},
      {"indices out of order",
       [](uint64_t* s) { std::swap(s[kUnionSlotHeaderWords + 10], s[kUnionSlotHeaderWords + 11]); },
       kPlanBadIndex},
      {"an index one past the vector",
       [](uint64_t* s) { s[kUnionSlotHeaderWords + s[kUnionSlotCount] - 1] = kUnionCount; },
       kPlanBadIndex},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<uint64_t> slots = valid;
    c.edit(slots.data() + unionSlotWords(kUnionCapacity));  // rank 1's slot
    const std::vector<uint64_t> refused = plan_of(slots, &global);
    CHECK(refused[kPlanStatus] == c.status);
    CHECK(refused[kPlanRank] == 1);
  }
  SECTION("speculative slots: a count above the slot asks for the exchange again") {
    p.speculative = 1;
    std::vector<uint64_t> slots = valid;
    slots[unionSlotWords(kUnionCapacity) + kUnionSlotCount] = kUnionCapacity + 5;  // rank 1's
    const std::vector<uint64_t> overflow = plan_of(slots, &global);
    CHECK(overflow[kPlanStatus] == kPlanOverflow);
    CHECK(overflow[kPlanRank] == 1);
    CHECK(overflow[kPlanMaxK] == kUnionCapacity + 5);  // the slot the exchange needs
    CHECK(overflow[kGatherPlanHeaderWords + 2] == kUnionCapacity + 5);
    CHECK(global == std::vector<int64_t>(kUnionRanks * kUnionCapacity, -7));  // no union built
    // Non-finite values come first (the policy, not another exchange), and a count past the
    // rank's range is refused as before.
    slots[unionSlotWords(kUnionCapacity) + kRecordNonFinite] = 2;
    CHECK(plan_of(slots, &global)[kPlanStatus] == kPlanNonFinite);
    slots[unionSlotWords(kUnionCapacity) + kRecordNonFinite] = 0;
    slots[unionSlotWords(kUnionCapacity) + kUnionSlotCount] = kUnionCount + 1;
    CHECK(plan_of(slots, &global)[kPlanStatus] == kPlanTooMany);
  }
}

namespace {

// The CPU fused pass over grad's [begin, end) keeping every entry at or above `floor` (with its
// value) as candidates: the accumulated vector and the candidates.
struct PassCandidates {
  std::vector<float> acc;
  std::vector<int64_t> idx;
  std::vector<float> val;
  size_t count = 0;
  size_t begin = 0, end = 0;
};

PassCandidates passCandidates(const std::vector<float>& grad, size_t begin, size_t end,
                              double floor) {
  PassCandidates c;
  c.acc.resize(grad.size());
  c.idx.resize(grad.size());
  c.val.resize(grad.size());
  c.begin = begin;
  c.end = end;
  sccl::AccumulateSelectArgs a;
  a.acc = c.acc.data();
  a.grad = grad.data();
  a.count = grad.size();
  a.begin = begin;
  a.end = end;
  a.floor = floor;
  a.idx = c.idx.data();
  a.val = c.val.data();
  a.capacity = c.idx.size();
  a.ncandidates = &c.count;
  REQUIRE(sccl::cpuKernels().accumulateSelect(a, nullptr) == scclSuccess);
  return c;
}

}  // namespace

TEST_CASE("the selection from the pass's candidates is the range's selection",
          "[resident_gather]") {
  // selectCandidatesPadded among the fused pass's candidates at a floor equals selectAbovePadded
  // over the range at every threshold at or above the floor; a count the plan got wrong is an
  // internal error, not a short slice.
  std::vector<float> grad(5000);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = float((i * 7919) % 1000) / 100.0f - 5.0f;
  const PassCandidates c = passCandidates(grad, 100, 4900, 3.0);
  const size_t ncand = c.count;
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  REQUIRE(ncand > 0);
  for (double threshold : {3.0, 4.0, 4.99, 6.0}) {
    INFO("threshold " << threshold);
    size_t n = 0;
    std::vector<int64_t> scratch(grad.size());
    REQUIRE(cpu.selectAbove(c.acc.data(), scclFloat32, c.begin, c.end, threshold, scratch.data(),
                            nullptr, scratch.size(), &n, nullptr) == scclSuccess);
    const size_t padded = n + 5;
    std::vector<int64_t> want(padded, 42), got(padded, 42);
    REQUIRE(cpu.selectAbovePadded(c.acc.data(), scclFloat32, c.begin, c.end, threshold, n,
                                  want.data(), padded, nullptr) == scclSuccess);
    REQUIRE(cpu.selectCandidatesPadded(c.idx.data(), c.val.data(), scclFloat32, ncand, threshold, n,
                                       got.data(), padded, nullptr) == scclSuccess);
    CHECK(got == want);
    if (n > 0) {
      CHECK(cpu.selectCandidatesPadded(c.idx.data(), c.val.data(), scclFloat32, ncand, threshold,
                                       n - 1, got.data(), padded, nullptr) == scclInternalError);
    }
  }
}

TEST_CASE("top-k and the counted selection among the pass's candidates equal the range's",
          "[resident_union]") {
  // The union call's selections on host buffers: with every entry at or above a floor kept,
  // selectTopKCandidates equals selectTopK over the range whenever at least k candidates exist
  // (ties at the k-th value included: the values repeat), and selectCandidatesCounted equals
  // selectAboveCounted at every threshold at or above the floor and every capacity.
  std::vector<float> grad(6000);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = float(int((i * 7919) % 400) - 200) / 20.0f;
  const PassCandidates c = passCandidates(grad, 50, 5950, 6.0);
  const size_t ncand = c.count;
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  REQUIRE(ncand > 100);
  for (size_t k : {size_t{1}, size_t{37}, ncand / 2, ncand}) {
    INFO("k " << k);
    std::vector<int64_t> want(k, 42), got(k, 43);
    uint64_t want_kth = 1, got_kth = 2;
    REQUIRE(cpu.selectTopK(c.acc.data(), scclFloat32, c.begin, c.end, k, want.data(), &want_kth,
                           nullptr) == scclSuccess);
    REQUIRE(cpu.selectTopKCandidates(c.idx.data(), c.val.data(), scclFloat32, ncand, k, got.data(),
                                     &got_kth, nullptr) == scclSuccess);
    CHECK(got == want);
    CHECK(got_kth == want_kth);
  }
  std::vector<int64_t> too_many(ncand + 1);
  uint64_t kth = 0;
  CHECK(cpu.selectTopKCandidates(c.idx.data(), c.val.data(), scclFloat32, ncand, ncand + 1,
                                 too_many.data(), &kth, nullptr) == scclInvalidArgument);
  for (double threshold : {6.0, 7.5, 9.95, 11.0}) {
    for (size_t capacity : {size_t{0}, size_t{5}, ncand}) {
      INFO("threshold " << threshold << " capacity " << capacity);
      std::vector<int64_t> want(capacity + 1, 42), got(capacity + 1, 42);
      uint64_t want_count = 1, got_count = 2;
      REQUIRE(cpu.selectAboveCounted(c.acc.data(), scclFloat32, c.begin, c.end, threshold, capacity,
                                     want.data(), &want_count, nullptr) == scclSuccess);
      REQUIRE(cpu.selectCandidatesCounted(c.idx.data(), c.val.data(), scclFloat32, ncand, threshold,
                                          capacity, got.data(), &got_count,
                                          nullptr) == scclSuccess);
      CHECK(got == want);  // the entry past the capacity untouched by both
      CHECK(got_count == want_count);
    }
  }
}

TEST_CASE("the counted selection fills its slot and counts past it", "[resident_union]") {
  // The speculative slot's selection on the CPU backend (the fake device runs it; the GPU test
  // compares the CUDA one with it): ascending indices up to the capacity, -1 after the count,
  // and the count of every entry at or above the threshold.
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 7 == 0) ? -2.0f : 0.5f;  // 143 at or above 1
  const auto select = [&](size_t begin, size_t end, size_t capacity, uint64_t* count) {
    std::vector<int64_t> idx(capacity, 42);
    REQUIRE(sccl::cpuKernels().selectAboveCounted(x.data(), scclFloat32, begin, end, 1.0, capacity,
                                                  idx.data(), count, nullptr) == scclSuccess);
    return idx;
  };
  uint64_t count = 0;
  std::vector<int64_t> idx = select(0, 1000, 200, &count);
  CHECK(count == 143);
  for (size_t j = 0; j < 143; ++j) CHECK(idx[j] == int64_t(7 * j));
  CHECK(std::all_of(idx.begin() + 143, idx.end(), [](int64_t v) { return v == -1; }));
  idx = select(0, 1000, 10, &count);  // past the capacity: the first ten, the full count
  CHECK(count == 143);
  CHECK(idx == std::vector<int64_t>{0, 7, 14, 21, 28, 35, 42, 49, 56, 63});
  idx = select(500, 500, 4, &count);  // an empty range
  CHECK(count == 0);
  CHECK(idx == std::vector<int64_t>(4, -1));
}
