// algorithm "auto" and device buffers (src/tuning/auto_device.h): which presets have a device
// path, the candidate a first device call switches to (deterministically, from the creation's
// agreed predictions), the switch and its undo on a real sparsifier, and the stream-ordered
// candidates. The device call itself needs a GPU: tests/gpu, tag [auto].
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sparsifier/sparsifier.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"
#include "tuning/auto_choice.h"
#include "tuning/auto_device.h"
#include "tuning/auto_retune.h"

using namespace sccl_test;

namespace {

// The host candidates with given predicted seconds (in candidate order), all usable.
sccl::AutoChoice predictions(const std::vector<double>& seconds) {
  sccl::AutoChoice choice;
  const std::vector<const char*>& names = sccl::autoCandidates();
  for (size_t i = 0; i < names.size(); ++i) {
    sccl::AutoCandidate c;
    c.algorithm = names[i];
    c.local_s_per_element = 1e-9;
    c.predicted.seconds = seconds[i];
    choice.candidates.push_back(c);
  }
  choice.algorithm = names[0];
  return choice;
}

}  // namespace

TEST_CASE("the presets with a device path", "[tuning][auto]") {
  CHECK_FALSE(sccl::presetHasDevicePath("dense"));
  for (const char* name : {"micro", "exdyna", "cltk", "topk", "hard_threshold", "sidco", "s2",
                           "micro_sync_free", "exdyna_sync_free"}) {
    INFO(name);
    CHECK(sccl::presetHasDevicePath(name));
  }
  CHECK_FALSE(sccl::presetHasDevicePath("auto"));
  CHECK_FALSE(sccl::presetHasDevicePath("nonsense"));
  CHECK_FALSE(sccl::presetHasDevicePath(nullptr));
  // With streamOrdered every candidate has one: the first device call never switches there.
  for (const char* name : sccl::autoCandidates(true)) CHECK(sccl::presetHasDevicePath(name));
}

TEST_CASE("a first device call picks the fastest candidate with a device path",
          "[tuning][auto]") {
  // dense, micro, exdyna, cltk: dense fastest, then cltk, exdyna, micro.
  sccl::AutoChoice choice = predictions({1e-3, 4e-3, 3e-3, 2e-3});
  const sccl::AutoCandidate* next = sccl::deviceCandidate(choice, "dense");
  REQUIRE(next != nullptr);
  CHECK(std::string(next->algorithm) == "cltk");
  // The same inputs, the same answer; a running preset with a device path stays.
  CHECK(sccl::deviceCandidate(predictions({1e-3, 4e-3, 3e-3, 2e-3}), "dense")->algorithm ==
        std::string("cltk"));
  CHECK(sccl::deviceCandidate(choice, "exdyna") == nullptr);
  CHECK(sccl::deviceCandidate(choice, "micro") == nullptr);
  // Equal predictions: the first in candidate order (micro).
  choice = predictions({1e-3, 2e-3, 2e-3, 2e-3});
  CHECK(std::string(sccl::deviceCandidate(choice, "dense")->algorithm) == "micro");
  // A candidate that could not be calibrated is never chosen.
  choice = predictions({1e-3, 2e-3, 3e-3, 4e-3});
  choice.candidates[1].local_s_per_element = -1;
  CHECK(std::string(sccl::deviceCandidate(choice, "dense")->algorithm) == "exdyna");
  for (size_t i = 1; i < choice.candidates.size(); ++i) choice.candidates[i].local_s_per_element = -1;
  CHECK(sccl::deviceCandidate(choice, "dense") == nullptr);
}

TEST_CASE("auto switches before its first device call and back when that call fails",
          "[tuning][auto]") {
  auto failures = runLocalRanks(2, [](int rank, scclComm_t comm, RankLog& log) {
    const size_t count = 4096;
    const scclSparseConfig_t config = sparseConfig("auto", 0.01);
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config),
                         scclSuccess, "scclSparsifierCreate auto"))
      return;
    log.check(sp->auto_choice != nullptr, "auto keeps the creation's choice");
    // Whatever the model chose on these in-process ranks, make the case of a switch: dense
    // running, cltk the fastest candidate with a device path.
    sp->auto_choice =
        std::make_shared<const sccl::AutoChoice>(predictions({1e-3, 4e-3, 3e-3, 2e-3}));
    const char* previous = nullptr;
    const char* name = nullptr;
    log.checkResult(sccl::sparsifierSwitchPreset(sp, sccl::autoPresetConfig(*sp, "micro", "")),
                    scclSuccess, "to micro");
    log.checkResult(sccl::autoPrepareDeviceCall(sp, &previous), scclSuccess, "prepare on micro");
    log.check(previous == nullptr, "a preset with a device path stays");
    log.checkResult(sccl::sparsifierSwitchPreset(sp, sccl::autoPresetConfig(*sp, "dense", "")),
                    scclSuccess, "to dense");
    sp->residual_to_flush = false;  // the switch from micro at call 0 left nothing unsent
    sp->predicted_call_us = 1e3;
    log.checkResult(sccl::autoPrepareDeviceCall(sp, &previous), scclSuccess, "prepare on dense");
    log.check(previous != nullptr && std::string(previous) == "dense", "switched from dense");
    log.checkResult(scclSparsifierGetAlgorithm(sp, &name), scclSuccess, "GetAlgorithm");
    log.check(std::string(name) == "cltk", std::string("device preset: ") + name);
    log.check(sp->predicted_call_us == 2e3, "the device preset's prediction");
    log.check(!sp->residual_to_flush, "nothing to flush at call 0");
    sccl::autoUndoDeviceCall(sp, previous);
    log.checkResult(scclSparsifierGetAlgorithm(sp, &name), scclSuccess, "GetAlgorithm");
    log.check(std::string(name) == "dense", std::string("undone: ") + name);
    log.check(sp->predicted_call_us == 1e3, "dense's prediction back");
    log.check(!sp->residual_to_flush, "the undo invents no flush");
    // The sparsifier still works on host buffers, and after one call the switch is over.
    std::vector<float> grad(count), out(count);
    for (size_t i = 0; i < count; ++i) grad[i] = float(testValue(5, rank, i)) * 0.01f;
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "host call after the undo");
    for (size_t i = 0; i < count; ++i) {
      const float expected = float(testValue(5, 0, i)) * 0.01f + float(testValue(5, 1, i)) * 0.01f;
      if (out[i] != expected) {
        log.check(false, "dense sum at " + std::to_string(i));
        break;
      }
    }
    log.checkResult(sccl::autoPrepareDeviceCall(sp, &previous), scclSuccess, "prepare at call 1");
    log.check(previous == nullptr, "no switch once a call completed");
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("stream-ordered auto chooses a sync-free preset, the same on every rank",
          "[tuning][auto]") {
  for (int nranks : {1, 3}) {
    std::vector<std::string> chosen(static_cast<size_t>(nranks));
    auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
      const size_t count = 20000;
      scclSparseConfig_t config = sparseConfig("auto", 0.01);
      config.streamOrdered = 1;
      scclSparsifier_t sp = nullptr;
      if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config),
                           scclSuccess, "scclSparsifierCreate auto, streamOrdered"))
        return;
      const char* name = nullptr;
      log.checkResult(scclSparsifierGetAlgorithm(sp, &name), scclSuccess, "GetAlgorithm");
      chosen[size_t(rank)] = name;
      // Host buffers ignore streamOrdered: the chosen preset runs here as any other.
      std::vector<float> grad(count), out(count);
      for (size_t i = 0; i < count; ++i) grad[i] = float(testValue(9, rank, i)) * 0.01f;
      for (int call = 0; call < 3; ++call) {
        log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32,
                                            scclSum, sp, comm, nullptr),
                        scclSuccess, "call " + std::to_string(call));
      }
      scclSparseStats_t stats{};
      stats.size = sizeof(stats);
      log.checkResult(scclSparsifierGetStats(sp, &stats), scclSuccess, "GetStats");
      log.check(stats.kGlobal > 0 && stats.kGlobal < count, "a sparse call");
      log.check(stats.predictedTimeUs > 0, "a prediction");
      log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
    });
    REQUIRE_NO_RANK_FAILURES(failures);
    INFO("n=" << nranks << " chose " << chosen[0]);
    CHECK((chosen[0] == "micro_sync_free" || chosen[0] == "exdyna_sync_free"));
    for (const std::string& name : chosen) CHECK(name == chosen[0]);
  }
}
