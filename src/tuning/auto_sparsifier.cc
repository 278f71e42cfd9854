#include "tuning/auto_sparsifier.h"

#include <cstring>
#include <memory>
#include <utility>

#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "core/log.h"
#include "sparsifier/sparsifier.h"
#include "tuning/auto_choice.h"
#include "tuning/auto_device.h"
#include "tuning/auto_retune.h"
#include "tuning/link_settings.h"

namespace sccl {
namespace {

scclResult_t createAutoSparsifier(scclComm* comm, size_t count, scclDataType_t dtype,
                                  const scclSparseConfig_t& config, scclSparsifier** out) {
  AutoCandidateConfigs configs;
  SCCL_CHECK(resolveAutoCandidates(config, &configs));
  AutoChoice choice;
  SCCL_CHECK(chooseAlgorithm(comm, count, dtype, configs, givenLinkSettings(), &choice));
  const AutoCandidate& candidate = choice.candidates[size_t(choice.chosen)];
  const size_t index =
      candidate.config_index < 0 ? size_t(choice.chosen) : size_t(candidate.config_index);
  ResolvedSparseConfig chosen = configs.resolved[index];
  if (candidate.node_hierarchy) chosen.hierarchy = "node";
  scclSparsifier* sp = nullptr;
  SCCL_CHECK(sparsifierCreate(comm, count, dtype, chosen, &sp));
  sp->predicted_call_us = candidate.predicted.seconds * 1e6;
  // The caller's density correction (empty: each preset's own; the sparsifier's copy of the
  // config has it decided), for the presets switched to.
  sp->auto_density_correction = chosen.density_correction;
  // A hierarchical choice is final: switching presets rebuilds a flat sparsifier's axes, not a
  // hierarchy's inner sparsifier.
  sp->auto_retune =
      candidate.node_hierarchy ? nullptr : makeAutoRetune(choice, sp->auto_density_correction);
  sp->auto_settled = sp->auto_retune == nullptr;
  SCCL_INFO(LogSubsys::Coll, "rank %d: sparsifier of %zu elements: %s", comm->rank, count,
            describeAutoChoice(choice).c_str());
  sp->auto_choice = std::make_shared<const AutoChoice>(std::move(choice));
  *out = sp;
  return scclSuccess;
}

}  // namespace

scclResult_t createSparsifier(scclComm* comm, size_t count, scclDataType_t dtype,
                              const scclSparseConfig_t& config, scclSparsifier** out) {
  if (config.algorithm != nullptr && std::strcmp(config.algorithm, kAutoAlgorithm) == 0)
    return createAutoSparsifier(comm, count, dtype, config, out);
  return sparsifierCreate(comm, count, dtype, config, out);
}

scclResult_t runSparseAllreduce(scclSparsifier* sp, const void* sendbuf, void* recvbuf,
                                scclRedOp_t op, bool on_device, void* stream) {
  // "auto" on device buffers: the first such call may switch to a preset with a device path,
  // and switches back if the call fails before the device state exists.
  const char* before_device = nullptr;
  if (on_device) SCCL_CHECK(autoPrepareDeviceCall(sp, &before_device));
  const scclResult_t result = sparseAllreduce(sp, sendbuf, recvbuf, op, on_device, stream);
  if (result != scclSuccess) {
    autoUndoDeviceCall(sp, before_device);
    return result;
  }
  // "auto": the measured calls may change the preset from the next call on.
  if (sp->auto_retune != nullptr) SCCL_CHECK(autoRetuneAfterCall(sp));
  return scclSuccess;
}

}  // namespace sccl
