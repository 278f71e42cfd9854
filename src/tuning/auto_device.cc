#include "tuning/auto_device.h"

#include <cstring>

#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "sparsifier/sparsifier.h"
#include "tuning/auto_retune.h"  // autoPresetConfig

namespace sccl {
namespace {

double predictedSeconds(const AutoChoice& choice, const char* algorithm) {
  for (const AutoCandidate& c : choice.candidates) {
    if (std::strcmp(c.algorithm, algorithm) == 0) return c.predicted.seconds;
  }
  return 0;
}

// The preset's config for this sparsifier, as the re-decision builds it: every setting kept but
// the preset's axes, and the caller's density correction where it named one. The residual
// carries over; at call 0 both presets select, so there is nothing to flush, and the flag stays.
scclResult_t switchTo(scclSparsifier* sp, const char* algorithm) {
  const bool flush = sp->residual_to_flush;
  SCCL_CHECK(
      sparsifierSwitchPreset(sp, autoPresetConfig(*sp, algorithm, sp->auto_density_correction)));
  sp->residual_to_flush = flush;
  sp->predicted_call_us = predictedSeconds(*sp->auto_choice, algorithm) * 1e6;
  return scclSuccess;
}

}  // namespace

bool presetHasDevicePath(const char* algorithm) {
  const PresetEntry* preset = algorithm != nullptr ? findPreset(algorithm) : nullptr;
  if (preset == nullptr) return false;
  const ReductionEntry* reduction = findReduction(preset->reduction);
  if (reduction == nullptr || !reduction->has_device_path) return false;
  // The device's sync_free path holds the threshold of these two only (cuda/, the device check).
  if (std::strcmp(preset->reduction, "sync_free") == 0) {
    return std::strcmp(preset->estimator, "scaling") == 0 ||
           std::strcmp(preset->estimator, "fixed") == 0;
  }
  return true;
}

const AutoCandidate* deviceCandidate(const AutoChoice& choice, const char* current) {
  if (presetHasDevicePath(current)) return nullptr;
  const AutoCandidate* best = nullptr;
  for (const AutoCandidate& c : choice.candidates) {
    if (c.local_s_per_element < 0 || c.node_hierarchy || !presetHasDevicePath(c.algorithm))
      continue;
    if (best == nullptr || c.predicted.seconds < best->predicted.seconds) best = &c;
  }
  return best;
}

scclResult_t autoPrepareDeviceCall(scclSparsifier* sp, const char** previous) {
  *previous = nullptr;
  // A hierarchical choice stays: its preset runs across nodes on device buffers where it has a
  // device path, else the call says why.
  if (sp->auto_choice == nullptr || sp->device != nullptr || sp->iteration != 0 ||
      sp->hierarchy != nullptr)
    return scclSuccess;
  const char* running = findPreset(sp->config.algorithm.c_str())->name;
  const AutoCandidate* next = deviceCandidate(*sp->auto_choice, running);
  if (next == nullptr) return scclSuccess;    // runs as it is, or the device check says why not
  SCCL_CHECK(switchTo(sp, next->algorithm));  // sparsifierSwitchPreset: an error changes nothing
  *previous = running;
  SCCL_INFO(LogSubsys::Coll,
            "auto: rank %d: device buffers: %s instead of %s (no device path), predicted %.3f ms",
            sp->comm->rank, next->algorithm, running, next->predicted.seconds * 1e3);
  return scclSuccess;
}

void autoUndoDeviceCall(scclSparsifier* sp, const char* previous) {
  if (previous == nullptr || sp->device != nullptr) return;
  // The same preset was built at creation: this does not fail but for memory.
  if (switchTo(sp, previous) != scclSuccess) {
    SCCL_WARN(LogSubsys::Coll, "auto: rank %d cannot switch back to %s after a failed call (%s)",
              sp->comm->rank, previous, threadLastError().c_str());
  }
}

}  // namespace sccl
