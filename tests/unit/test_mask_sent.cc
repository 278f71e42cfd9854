// scclSparsifierMaskSent: after a call on host buffers it zeroes exactly what the call's output
// carries (the gather and sync_free presets' global index list, which for these gradients is
// where the output is non-zero; the union of s2's marked blocks; everything for dense), in every
// gradient dtype, and nothing before a call, after a reset, or after a call that discarded its
// step or failed; a preset switch right after the call ("auto"'s retune) keeps the call's mask.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier.h"
#include "support/local_ranks.h"
#include "support/typed_values.h"

using sccl_test::RankLog;
using sccl_test::runLocalRanks;

namespace {

constexpr size_t kCount = 5000;
constexpr size_t kBlock = 64;

// Never sums to exactly 0 over ranks at an element (all positive), distinct magnitudes.
float gradientOf(int rank, int call, size_t i) {
  const uint32_t h = uint32_t(i * 2654435761u) ^ uint32_t(rank * 7919 + call * 104729);
  return 0.001f + float(h % 100003) / 100003.0f * float(1 + (i % 7));
}

// The mask of `sp` now zeroes nothing (no call has sent anything since `when`).
void checkMasksNothing(scclSparsifier_t sp, RankLog& log, const std::string& when) {
  std::vector<float> mask(kCount, 1.0f);
  log.checkResult(scclSparsifierMaskSent(sp, mask.data(), kCount, scclFloat32), scclSuccess,
                  "mask " + when);
  log.check(mask == std::vector<float>(kCount, 1.0f), "nothing zeroed " + when);
}

scclSparseConfig_t configFor(const char* preset) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = preset;
  config.density = 0.02;
  if (std::strcmp(preset, "s2") == 0) config.sketchBlockSize = int(kBlock);
  return config;
}

}  // namespace

TEST_CASE("mask sent: zero exactly where the last call's output carries values", "[mask_sent]") {
  for (const char* preset : {"micro", "exdyna", "topk", "micro_sync_free", "s2", "dense"}) {
    for (int nranks : {1, 3}) {
      DYNAMIC_SECTION(preset << ", " << nranks << " ranks") {
        const scclSparseConfig_t config = configFor(preset);
        const bool blocks = std::strcmp(preset, "s2") == 0;
        auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
          scclSparsifier_t sp = nullptr;
          if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                               scclSuccess, "create"))
            return;
          std::vector<float> send(kCount), recv(kCount), mask(kCount, 1.0f);
          checkMasksNothing(sp, log, "before any call");
          for (int t = 0; t < 3; ++t) {
            for (size_t i = 0; i < kCount; ++i) send[i] = gradientOf(rank, t, i);
            if (!log.checkResult(scclSparseAllreduce(send.data(), recv.data(), kCount, scclFloat32,
                                                     scclSum, sp, comm, nullptr),
                                 scclSuccess, "call"))
              return;
            std::fill(mask.begin(), mask.end(), 1.0f);
            std::vector<double> as_double(kCount, 1.0);
            log.checkResult(scclSparsifierMaskSent(sp, mask.data(), kCount, scclFloat32),
                            scclSuccess, "mask float32");
            log.checkResult(scclSparsifierMaskSent(sp, as_double.data(), kCount, scclFloat64),
                            scclSuccess, "mask float64");
            size_t zeroed = 0, wrong = 0;
            for (size_t i = 0; i < kCount; ++i) {
              const bool carried = recv[i] != 0.0f;
              zeroed += mask[i] == 0.0f ? 1 : 0;
              if (blocks) {
                // Whole blocks: zeroed where the output carries a value, and every element of a
                // zeroed block together.
                const size_t first = i / kBlock * kBlock;
                if ((carried && mask[i] != 0.0f) || (mask[i] != mask[first])) ++wrong;
              } else if ((mask[i] == 0.0f) != carried) {
                ++wrong;
              }
              if ((as_double[i] == 0.0) != (mask[i] == 0.0f)) ++wrong;
            }
            log.check(wrong == 0, std::to_string(wrong) + " element(s) masked against the output");
            log.check(zeroed > 0 && (zeroed < kCount || std::strcmp(preset, "dense") == 0),
                      "a selection was masked: " + std::to_string(zeroed));
          }
          // After a reset nothing was sent.
          log.checkResult(scclSparsifierReset(sp), scclSuccess, "reset");
          checkMasksNothing(sp, log, "after a reset");
          scclSparsifierDestroy(sp);
        });
        REQUIRE_NO_RANK_FAILURES(failures);
      }
    }
  }
}

TEST_CASE("mask sent: half types, and nothing after a discarded or refused step", "[mask_sent]") {
  for (const char* policy : {"propagate", "error"}) {
    DYNAMIC_SECTION("non-finite policy " << policy) {
      scclSparseConfig_t config = configFor("micro");
      config.nonFinite =
          std::strcmp(policy, "error") == 0 ? scclNonFiniteError : scclNonFinitePropagate;
      auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
        scclSparsifier_t sp = nullptr;
        if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                             scclSuccess, "create"))
          return;
        std::vector<float> send(kCount), recv(kCount);
        for (size_t i = 0; i < kCount; ++i) send[i] = gradientOf(rank, 0, i);
        log.checkResult(scclSparseAllreduce(send.data(), recv.data(), kCount, scclFloat32, scclSum,
                                            sp, comm, nullptr),
                        scclSuccess, "first call");
        for (scclDataType_t half : {scclFloat16, scclBfloat16}) {
          std::vector<unsigned char> mask(kCount * 2);
          for (size_t i = 0; i < kCount; ++i) sccl_test::storeValue(half, mask.data(), i, 1.0);
          log.checkResult(scclSparsifierMaskSent(sp, mask.data(), kCount, half), scclSuccess,
                          "mask a half type");
          size_t wrong = 0;
          for (size_t i = 0; i < kCount; ++i)
            if ((sccl_test::loadValue(half, mask.data(), i) == 0.0) != (recv[i] != 0.0f)) ++wrong;
          log.check(wrong == 0, std::to_string(wrong) + " half element(s) masked wrongly");
        }
        if (rank == 1) send[17] = std::numeric_limits<float>::quiet_NaN();
        const scclResult_t result = scclSparseAllreduce(send.data(), recv.data(), kCount,
                                                        scclFloat32, scclSum, sp, comm, nullptr);
        log.checkResult(result,
                        config.nonFinite == scclNonFiniteError ? scclInvalidArgument : scclSuccess,
                        "the call with a NaN");
        checkMasksNothing(sp, log, "after the NaN call");
        scclSparsifierDestroy(sp);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("mask sent: a preset switch after the call keeps its mask", "[mask_sent]") {
  struct Switch {
    const char* from;
    const char* to;
  };
  for (const Switch& sw : {Switch{"s2", "micro"}, Switch{"micro", "s2"}, Switch{"topk", "dense"}}) {
    DYNAMIC_SECTION(sw.from << " then " << sw.to) {
      const scclSparseConfig_t config = configFor(sw.from);
      sccl::ResolvedSparseConfig next;
      REQUIRE(sccl::resolveSparseConfig(configFor(sw.to), &next) == scclSuccess);
      auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
        scclSparsifier_t sp = nullptr;
        if (!log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &config),
                             scclSuccess, "create"))
          return;
        std::vector<float> send(kCount), recv(kCount), before(kCount, 1.0f), after(kCount, 1.0f);
        for (size_t i = 0; i < kCount; ++i) send[i] = gradientOf(rank, 0, i);
        log.checkResult(scclSparseAllreduce(send.data(), recv.data(), kCount, scclFloat32, scclSum,
                                            sp, comm, nullptr),
                        scclSuccess, "call");
        log.checkResult(scclSparsifierMaskSent(sp, before.data(), kCount, scclFloat32), scclSuccess,
                        "mask before the switch");
        // What "auto" does right after a call when its measurements favour another preset.
        log.checkResult(sccl::sparsifierSwitchPreset(sp, next), scclSuccess, "switch");
        log.checkResult(scclSparsifierMaskSent(sp, after.data(), kCount, scclFloat32), scclSuccess,
                        "mask after the switch");
        log.check(before == after, "the switch kept the last call's mask");
        log.check(std::count(after.begin(), after.end(), 0.0f) > 0, "something was masked");
        scclSparsifierDestroy(sp);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}
