// The device-resident S2 call (algorithms/sketch_call.cc) on the fake device (harness
// support/fake_gather_runs.h): the host run's outputs and residuals bit for bit at 1-4 ranks,
// every gradient type, both block selections and both residual rules; nothing read back with the
// "topk" selection, one plan and one wait with "nonzero"; the non-finite policies, hostile headers
// and a bad union refused on every rank (at the call with recvbuf untouched when the plan is read
// back, else through the sticky asynchronous fault that fails every later call); the plan's
// decisions on their own.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/shared/sketch_plan.h"
#include "algorithms/async_fault.h"
#include "kernels/shared/sync_free_async_fault.h"
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

TEST_CASE("resident S2 equals the host run bit for bit", "[sketch_call]") {
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

TEST_CASE("resident S2 reads nothing back with the topk selection, its plan with nonzero",
          "[sketch_call]") {
  const size_t count = 20011;
  for (int nranks : {1, 4}) {
    for (Collectives how : {Collectives::OnStream, Collectives::Staged}) {
      for (const char* selection : {"topk", "nonzero"}) {
        INFO(nranks << " ranks, " << (how == Collectives::OnStream ? "on the stream" : "staged")
                    << ", " << selection);
        const bool unread = std::strcmp(selection, "topk") == 0;
        FakeRun run = runOnFake(nranks, count, s2Config(64, selection, "unselected"), 3, skewed(),
                                scclSum, how);
        REQUIRE_NO_RANK_FAILURES(run.failures);
        REQUIRE(run.resident);
        CHECK(run.violations.empty());
        for (size_t t = 0; t < 3; ++t) {
          for (size_t r = 0; r < size_t(nranks); ++r) {
            INFO("call " << t << " rank " << r);
            const CallCounts& c = run.counts[t][r];
            // The header travels with a launch; staged, each collective's result goes up.
            CHECK(c.to_device == (how == Collectives::OnStream ? 0u : 3u));
            CHECK(c.async_fault == 0);
            // "topk": the encode's bound is K whole blocks, the outcome settled on the device;
            // "nonzero": the table's width follows the plan's largest count, read back (the
            // fake device counts an encode without a bound as the CUDA one, with a read-back).
            const uint64_t plan = unread ? 0 : 1;
            if (how == Collectives::OnStream) {
              CHECK(c.to_host == plan);
              CHECK(c.to_host_bytes == plan * (64 + 16 * uint64_t(nranks)));
              CHECK(c.waits == plan);
            } else {  // and the three collectives staged, a wait each
              CHECK(c.to_host == 3 + plan);
              CHECK(c.waits == 3 + plan);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("resident S2 applies the non-finite policies on the device", "[sketch_call]") {
  const size_t count = 20011;
  const int nranks = 3;
  const GradientFn poisoned = [](int r, uint64_t t, size_t i) {
    if (r == 2 && t == 1 && i == 99) return std::numeric_limits<float>::quiet_NaN();
    return gradientValue(37, r, t, i);
  };
  SECTION("propagate: recvbuf NaN and the residual kept, as the host; the calls go on") {
    for (const char* selection : {"topk", "nonzero"}) {
      requireSameAsHost(selection, nranks, count, s2Config(32, selection, "unselected"), 4,
                        poisoned, scclSum, Collectives::OnStream);
    }
  }
  SECTION("error: refused at the call when the plan is read, else a sticky asynchronous fault") {
    scclSparseConfig_t nonzero = s2Config(32, "nonzero", "unselected");
    nonzero.nonFinite = scclNonFiniteError;
    requireSameAsHost("nonzero, error", nranks, count, nonzero, 3, poisoned, scclSum,
                      Collectives::OnStream);
    scclSparseConfig_t topk = s2Config(32, "topk", "unselected");
    topk.nonFinite = scclNonFiniteError;
    FakeRun run = runOnFake(nranks, count, topk, 3, poisoned, scclSum, Collectives::OnStream);
    REQUIRE_NO_RANK_FAILURES(run.failures);
    CHECK(run.violations.empty());
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("rank " << r << ": " << run.counts[2][r].error);
      CHECK(run.calls[1][r].result == scclSuccess);  // enqueued; the device decides
      for (float v : run.calls[1][r].output) CHECK(std::isnan(v));
      CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
      CHECK(sccl::asyncFaultKind(run.counts[1][r].async_fault) == sccl::AsyncFault::NonFinite);
      CHECK(sccl::asyncFaultRank(run.counts[1][r].async_fault) == 2);
      CHECK(sccl::asyncFaultCall(run.counts[1][r].async_fault) == 1);
      // What scclSparsifierGetAsyncError reports from that word.
      CHECK(sccl::asyncFaultError(run.counts[1][r].async_fault, "s2") == scclInvalidArgument);
      CHECK(std::string(scclGetLastError(nullptr)).find("rank 2 had NaN/Inf") != std::string::npos);
      // Sticky: the next call (finite data) is enqueued as every rank's is, and the device fills
      // recvbuf with NaN and changes nothing.
      CHECK(run.calls[2][r].result == scclSuccess);
      for (float v : run.calls[2][r].output) CHECK(std::isnan(v));
      CHECK(run.calls[2][r].residual == run.calls[0][r].residual);
      CHECK(run.counts[2][r].async_fault == run.counts[1][r].async_fault);
    }
  }
}

TEST_CASE("resident S2 refuses hostile records on every rank, at the call or asynchronously",
          "[sketch_call]") {
  const size_t count = 20011;
  const int nranks = 3;
  struct Case {
    const char* what;
    size_t collective;  // 0: the headers' all-gather, 1: the bitmaps' max all-reduce
    std::function<void(void* data, size_t bytes)> edit;
    scclResult_t result;
    const char* says;        // what the call's error text names (plan read back)
    sccl::AsyncFault fault;  // the sticky fault (nothing read back)
    const char* async_says;  // what scclSparsifierGetAsyncError's text names
  };
  const auto rank1 = [](void* data, size_t bytes) {
    return static_cast<uint64_t*>(data) + bytes / sizeof(uint64_t) / nranks;
  };
  const std::vector<Case> cases = {
      {"a union byte of 2", 1, [](void* data, size_t) { static_cast<uint8_t*>(data)[5] = 2; },
       scclRemoteError, "block 5 ", sccl::AsyncFault::BadBitmap, "a peer sent a block bitmap"},
      {"a union byte of 255 in the last block", 1,
       [](void* data, size_t bytes) { static_cast<uint8_t*>(data)[bytes - 1] = 255; },
       scclRemoteError, "block 625 ",  // 20011 in blocks of 32: 626 blocks
       sccl::AsyncFault::BadBitmap, "a peer sent a block bitmap"},
      {"more marked elements than the vector", 0,
       [&](void* data, size_t bytes) { rank1(data, bytes)[sccl::kSketchElements] = count + 1; },
       scclRemoteError, "rank 1 claims", sccl::AsyncFault::CountAboveCapacity,
       "rank 1 claimed a count"},
      {"another call", 0,
       [&](void* data, size_t bytes) { rank1(data, bytes)[sccl::kSketchSequence] += 1; },
       scclInvalidUsage, "mismatched", sccl::AsyncFault::OtherCall, "rank 1 was at another call"},
      {"another config", 0,
       [&](void* data, size_t bytes) { rank1(data, bytes)[sccl::kSketchFingerprint] ^= 1; },
       scclInvalidUsage, "mismatched", sccl::AsyncFault::OtherCall, "rank 1 was at another call"},
  };
  for (const char* selection : {"nonzero", "topk"}) {
    const bool unread = std::strcmp(selection, "topk") == 0;
    for (const Case& c : cases) {
      INFO(selection << ": " << c.what);
      FakeRun run = runOnFake(nranks, count, s2Config(32, selection, "unselected"), 4, skewed(),
                              scclSum, Collectives::OnStream,
                              [&](int call, size_t collective, int, void* data, size_t bytes) {
                                if (call == 1 && collective == c.collective) c.edit(data, bytes);
                              });
      REQUIRE_NO_RANK_FAILURES(run.failures);
      CHECK(run.violations.empty());
      for (size_t r = 0; r < size_t(nranks); ++r) {
        CHECK(run.calls[0][r].result == scclSuccess);
        if (!unread) {
          INFO("rank " << r << ": " << run.counts[1][r].error);
          CHECK(run.calls[1][r].result == c.result);
          CHECK(run.counts[1][r].error.find(c.says) != std::string::npos);
          CHECK(run.calls[1][r].output == std::vector<float>(count, kSentinel));  // untouched
          CHECK(run.calls[1][r].residual == run.calls[0][r].residual);            // kept
          CHECK(run.calls[2][r].result == scclSuccess);  // the sparsifier stays usable
          continue;
        }
        INFO("rank " << r);
        // Enqueued without a wait: the device settles the call, NaN out, the residual kept,
        // the fault raised where the host reads it, with the code and text
        // scclSparsifierGetAsyncError gives.
        CHECK(run.calls[1][r].result == scclSuccess);
        for (float v : run.calls[1][r].output) CHECK(std::isnan(v));
        CHECK(run.calls[1][r].residual == run.calls[0][r].residual);
        const uint64_t word = run.counts[1][r].async_fault;
        CHECK(sccl::asyncFaultKind(word) == c.fault);
        CHECK(sccl::asyncFaultError(word, "s2") == c.result);
        const std::string text = scclGetLastError(nullptr);
        CHECK(text.find(c.async_says) != std::string::npos);
        CHECK(text.find("at call 1") != std::string::npos);
        // Sticky: every later call runs on every rank alike and changes nothing.
        for (size_t t : {2, 3}) {
          CHECK(run.calls[t][r].result == scclSuccess);
          for (float v : run.calls[t][r].output) CHECK(std::isnan(v));
          CHECK(run.calls[t][r].residual == run.calls[0][r].residual);
          CHECK(run.counts[t][r].async_fault == word);
        }
      }
    }
  }
}

TEST_CASE("the sketch plan counts the union, checks the headers and refuses a bad union",
          "[sketch_call]") {
  using namespace sccl;
  // 4 ranks, 103 elements in blocks of 10: 11 blocks, the last of 3 elements.
  constexpr size_t kRanks = 4, kCount = 103, kBlock = 10, kBlocks = 11;
  GatherPlanParams p;
  p.fingerprint = 0xabc;
  p.sequence = 7;
  p.nranks = kRanks;
  p.self = 1;
  std::vector<uint64_t> headers(kRanks * kSketchHeaderWords, 0);
  const std::vector<uint64_t> counts = {20, 13, 0, 23};
  for (size_t r = 0; r < kRanks; ++r) {
    uint64_t* h = headers.data() + r * kSketchHeaderWords;
    h[kSketchFingerprint] = p.fingerprint;
    h[kSketchSequence] = p.sequence;
    h[kSketchElements] = counts[r];
  }
  const std::vector<uint8_t> united = {1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1};  // 43 elements
  REQUIRE(united.size() == kBlocks);
  const auto plan_of = [&](const std::vector<uint64_t>& h, const std::vector<uint8_t>& u) {
    std::vector<uint64_t> plan(sketchPlanWords(kRanks), 0xdead);
    *sketchPlanScratch(plan.data(), kRanks).cutoff = 0x4010000000000001ull;  // this rank's
    REQUIRE(cpuKernels().planSketch(h.data(), p, kCount, kBlock, u.data(), plan.data(), nullptr) ==
            scclSuccess);
    return plan;
  };
  const std::vector<uint64_t> plan = plan_of(headers, united);
  REQUIRE(plan[kPlanStatus] == kPlanOk);
  for (size_t r = 0; r < kRanks; ++r) CHECK(plan[kGatherPlanHeaderWords + 2 * r] == counts[r]);
  CHECK(plan[kPlanMaxK] == 23);
  CHECK(plan[kPlanKGlobal] == 43);
  CHECK(plan[kPlanEdge] == 0x4010000000000001ull);  // this rank's cut-off
  uint64_t elements = 0;  // markedElements: the partial last block counts its 3
  REQUIRE(cpuKernels().markedElements(united.data(), kCount, kBlock, &elements, nullptr) ==
          scclSuccess);
  CHECK(elements == 43);
  struct Case {
    const char* what;
    std::function<void(std::vector<uint64_t>&, std::vector<uint8_t>&)> edit;
    uint64_t status;
    uint64_t rank;
  };
  const auto at = [](std::vector<uint64_t>& h, size_t r) {
    return h.data() + r * kSketchHeaderWords;
  };
  const std::vector<Case> cases = {
      {"a union byte of 2 at block 4",
       [](std::vector<uint64_t>&, std::vector<uint8_t>& u) { u[4] = 2; }, kPlanBadBitmap, 0},
      {"more elements than the vector",
       [&](std::vector<uint64_t>& h, std::vector<uint8_t>&) { at(h, 2)[kSketchElements] = 104; },
       kPlanTooMany, 2},
      {"non-finite values come before a bad byte",
       [&](std::vector<uint64_t>& h, std::vector<uint8_t>& u) {
         u[0] = 7;
         at(h, 3)[kSketchNonFinite] = 2;
       },
       kPlanNonFinite, 3},
      {"another call comes first",
       [&](std::vector<uint64_t>& h, std::vector<uint8_t>&) {
         at(h, 2)[kSketchNonFinite] = 2;
         at(h, 3)[kSketchSequence] = 8;
       },
       kPlanMismatch, 3},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<uint64_t> h = headers;
    std::vector<uint8_t> u = united;
    c.edit(h, u);
    const std::vector<uint64_t> refused = plan_of(h, u);
    CHECK(refused[kPlanStatus] == c.status);
    CHECK(refused[kPlanRank] == c.rank);
  }
}
