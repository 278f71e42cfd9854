// The sparsifier: per-buffer state of the sparse all-reduce (error-feedback residual, the
// estimator and search space of its preset, iteration, statistics) and the orchestration of one
// call: accumulate, hand over to the reduction, swap in the new residual, record statistics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/reduction_context.h"
#include "core/aligned_buffer.h"
#include "sparsifier/node_hierarchy.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier_device.h"
#include "transports/agreement_record.h"
#include "estimators/threshold_estimator.h"
#include "partition/search_space.h"
#include "sparsecoll/sparsecoll.h"

struct scclComm;
namespace sccl {
struct AutoChoice;
struct AutoRetune;
struct NodeHierarchy;
}  // namespace sccl

struct scclSparsifier {
  static constexpr uint64_t kMagic = 0x5343434c53706172ull;  // "SCCLSpar"
  uint64_t magic = kMagic;

  scclComm* comm = nullptr;
  size_t count = 0;
  scclDataType_t dtype = scclFloat32;      // gradient type
  scclDataType_t acc_dtype = scclFloat32;  // residual type: float32, or float64 for float64
  sccl::ResolvedSparseConfig config;
  uint64_t k_target = 1;
  // The density in effect (k_target = max(1, floor(density * count))): the config's target, or
  // the warm-up's density of this call (densityForCall). 0 until the first call applies it.
  double density = 0;
  // The highest density the buffers sized at creation allow (sync_free's capacity): the
  // creation's max(density, warm-up start).
  double density_ceiling = 1;
  // What the ranks agree on at every call (comm/call_agreement.h): the identity every rank gives
  // this sparsifier (1 + the number of its creation call on the communicator, the same on every
  // rank) and the fingerprint of its count, dtype and config, with the density in effect mixed
  // in (callFingerprint) so that ranks which set different densities fail the call's agreement.
  uint64_t identity = 0;
  uint64_t fingerprint = 0;
  uint64_t config_fingerprint = 0;  // of count, dtype and config alone (the creation's record)
  // The fingerprint of count, dtype and config without the density schedule (target and warm-up):
  // what a checkpoint records and a sparsifier loading it must match; the checkpoint carries the
  // density in effect itself (sparsifier/sparsifier_state.h).
  uint64_t checkpoint_fingerprint = 0;

  const sccl::ReductionEntry* reduction = nullptr;
  std::unique_ptr<sccl::ThresholdEstimator> estimator;
  std::unique_ptr<sccl::SearchSpace> search;

  // Double-buffered residual: a call accumulates residual + gradient into `acc`; if the step
  // completes, acc (zeroed where sent) becomes the residual by a swap; if it is discarded (NaN
  // policy), the residual is untouched.
  sccl::AlignedBuffer residual;
  sccl::AlignedBuffer acc;
  // The residual and buffers in GPU memory once the sparsifier has run on device buffers
  // (sparsifier/sparsifier_device.h); the host residual is then unused. Reset frees it.
  std::unique_ptr<sccl::DeviceSparsifierState, sccl::DeviceSparsifierStateDeleter> device;
  // "hierarchy": "node" (sparsifier/node_hierarchy.h): the node's split communicators and the
  // inner sparsifier over this rank's chunk; null for a flat sparsifier.
  std::unique_ptr<sccl::NodeHierarchy> hierarchy;

  uint64_t iteration = 0;
  // What the reductions keep between calls (k_i of the last call, scratch, the reduction's own
  // state): theirs, kept here, handed to them in each call's context (reductionContext).
  sccl::ReductionMemory reduction_memory;
  // "algorithm": "auto": the cost model's time of one call of the chosen preset, in us (0 for a
  // preset named by the caller); statistics and the measured-against-predicted log line.
  double predicted_call_us = 0;
  // "auto"'s re-decision from measured calls (tuning/auto_retune.h); null for a named preset or
  // with SCCL_AUTO_RETUNE=0.
  std::shared_ptr<sccl::AutoRetune> auto_retune;
  // "auto": the creation's candidates and predictions (the first call on device buffers picks
  // among those with a device path: tuning/auto_device.h), and the caller's density correction
  // (empty: each preset's own); null and empty for a named preset.
  std::shared_ptr<const sccl::AutoChoice> auto_choice;
  std::string auto_density_correction;
  // The residual holds values never sent while the reduction in effect sends whole gradients
  // ("auto" switched from a sparse preset to dense): the next call sends residual + gradient.
  bool residual_to_flush = false;
  // The statistics' autoSwitches and autoSettled (kept by reset).
  uint64_t auto_switches = 0;
  bool auto_settled = true;
  scclSparseStats_t stats{};

  // The last completed host call's mask (scclSparsifierMaskSent, its reduction's; kept across
  // a preset switch): null before one, after a failed or discarded call, a reset or a
  // checkpoint load.
  scclResult_t (*last_call_mask)(const sccl::ReductionContext&, void*, scclDataType_t) = nullptr;
};

namespace sccl {

// Resolves `config` (sparsifier/sparse_config.h) and creates the sparsifier of the preset it names
// (collective: the ranks agree on the config). "auto" is chosen above this layer
// (tuning/sparsifier_factory.h) and comes here as the chosen preset's resolved config.
scclResult_t sparsifierCreate(scclComm* comm, size_t count, scclDataType_t dtype,
                              const scclSparseConfig_t& config, scclSparsifier** out);
scclResult_t sparsifierCreate(scclComm* comm, size_t count, scclDataType_t dtype,
                              const ResolvedSparseConfig& config, scclSparsifier** out);
void sparsifierDestroy(scclSparsifier* sp);
scclResult_t sparsifierReset(scclSparsifier* sp);
// on_device: sendbuf and recvbuf are GPU memory (sparsifier/sparsifier_device.h), ordered on
// stream.
scclResult_t sparseAllreduce(scclSparsifier* sp, const void* sendbuf, void* recvbuf, scclRedOp_t op,
                             bool on_device = false, void* stream = nullptr);
// The device call after its entry checks: density, agreement, `run` (the device half:
// runDeviceSparseAllreduce of sparsifier/sparsifier_device.h, or the tests' fake device), then
// the call's statistics. Flat sparsifiers only.
using DeviceCallRun =
    std::function<scclResult_t(scclSparsifier& sp, SparseCall& call, void* stream)>;
scclResult_t sparseAllreduceOnDevice(scclSparsifier* sp, const void* sendbuf, void* recvbuf,
                                     scclRedOp_t op, void* stream, const DeviceCallRun& run);
scclResult_t sparsifierStats(scclSparsifier* sp, scclSparseStats_t* stats);
// The density of the next call (the target, or the warm-up's step at sp.iteration) with its k,
// the estimator's parameters and the call fingerprint; what sparseAllreduce applies first.
void applyCallDensity(scclSparsifier& sp);
// scclSparsifierSetDensity: checks (nothing changes on an error), sets the config's target and
// ends its warm-up; the next call applies it.
scclResult_t sparsifierSetDensity(scclSparsifier* sp, double density);
// Rebuilds the sparsifier in place for another preset's config ("auto" re-deciding,
// tuning/auto_retune.h): a new estimator, search space and reduction; the residual, the call
// number, the identity and the statistics are kept. Collective in effect: every rank switches
// before the same call, or the next call's agreement fails. Host buffers only. On an error nothing
// changes.
scclResult_t sparsifierSwitchPreset(scclSparsifier* sp, const ResolvedSparseConfig& config);

// The record every rank agrees on before one scclSparseAllreduce: the sparsifier's identity, its
// call number, count, dtype, reduction and fingerprint.
CallRecord sparseCallRecord(const scclSparsifier& sp, scclRedOp_t op, bool on_device);

// Builds sp.estimator, sp.search and sp.reduction for sp.config (count, dtype and comm set) and
// resolves its density correction; the estimator is built for the first call's density.
scclResult_t buildSparsifierAxes(scclSparsifier& sp);

// Whether a call discarded for non-finite values (the propagate policy) still advances the call
// number: where a leader rotates with it (CLT-k), so that the leader never depends on the data
// and a device call that reads nothing back needs no outcome from the host. Elsewhere a
// discarded call is not counted (the same call number comes again).
bool discardedCallCounts(const scclSparsifier& sp);

// The sparsifier as its reduction sees it (algorithms/reduction_context.h), for one call (after
// applyCallDensity), a preparation or a mask; valid while the preset is unchanged.
ReductionContext reductionContext(scclSparsifier& sp);

// scclSparsifierMaskSent: the mask of the last completed call (nothing before one).
scclResult_t sparsifierMaskSent(scclSparsifier& sp, void* buffer, scclDataType_t dtype);

// Element size of the residual.
inline size_t accElementSize(const scclSparsifier& sp) {
  return sp.acc_dtype == scclFloat64 ? 8 : 4;
}

}  // namespace sccl
