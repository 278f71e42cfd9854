#include "sparsifier/sparsifier.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "algorithms/reductions.h"
#include "algorithms/sent_mask.h"
#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "sparsifier/node_hierarchy.h"
#include "algorithms/reductions.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Creation is a collective call like any other: the ranks agree on count, dtype and the config's
// fingerprint, and the agreed number of the call becomes the sparsifier's identity.
scclResult_t agreeOnCreation(scclSparsifier& sp) {
  CallRecord record = callRecord(CallOperation::SparsifierCreate);
  record.count = sp.count;
  record.dtype = static_cast<int16_t>(sp.dtype);
  record.config = sp.config_fingerprint;
  uint64_t sequence = 0;
  SCCL_CHECK(agreeOnCall(sp.comm, record, &sequence,
                         ("this rank's config: " + describeSparseConfig(sp.config)).c_str()));
  sp.identity = sequence + 1;
  return scclSuccess;
}

// The in-call density correction counts over exclusive ranges around a threshold every rank
// shares: it needs the gather reduction, an exclusive search space and a correctable estimator.
// The preset's choice applies where it can (micro with estimator "topk" simply selects exactly);
// an explicit "histogram" that cannot apply is an error.
scclResult_t resolveDensityCorrection(scclSparsifier& sp) {
  ResolvedSparseConfig& c = sp.config;
  const bool applicable =
      sp.reduction->needs_selection && sp.search->exclusive() && sp.estimator->correctable();
  if (c.density_correction.empty()) {
    const PresetEntry* preset = findPreset(c.algorithm.c_str());
    const bool wanted = std::strcmp(preset->density_correction, "histogram") == 0;
    c.density_correction = wanted && applicable ? "histogram" : "none";
    return scclSuccess;
  }
  SCCL_REQUIRE_ARG(c.density_correction != "histogram" || applicable,
                   "densityCorrection \"histogram\" needs an exclusive search space (micro, "
                   "exdyna) and the scaling estimator; this config has search '%s', estimator "
                   "'%s', reduction '%s'",
                   c.search.c_str(), c.estimator.c_str(), c.reduction.c_str());
  return scclSuccess;
}

}  // namespace

scclResult_t buildSparsifierAxes(scclSparsifier& sp) {
  const ResolvedSparseConfig& c = sp.config;
  EstimatorParams estimator;
  estimator.density = densityForCall(c, 0);
  estimator.count = sp.count;
  estimator.nranks = sp.comm->nranks;
  static_cast<EstimatorKnobs&>(estimator) = c.estimator_knobs;
  estimator.scaling_proportional = c.scaling_rule == "proportional";
  SCCL_CHECK(makeEstimator(c.estimator, estimator, &sp.estimator));
  SearchSpaceParams search;
  search.count = sp.count;
  search.nranks = sp.comm->nranks;
  static_cast<SearchKnobs&>(search) = c.search_knobs;
  SCCL_CHECK(makeSearchSpace(c.search, search, &sp.search));
  sp.reduction = findReduction(c.reduction.c_str());
  return resolveDensityCorrection(sp);
}

namespace {

// Logged with a refused call: the density is the likely culprit after scclSparsifierSetDensity.
std::string describeCallDensity(const scclSparsifier& sp) {
  char text[160];
  std::snprintf(text, sizeof(text), "this rank's density in effect %.17g (target %.17g, call %llu)",
                sp.density, sp.config.density, static_cast<unsigned long long>(sp.iteration));
  return text;
}

// One call's arguments, for the reduction that sees the sparsifier as `ctx`.
SparseCall callOn(const ReductionContext& ctx, const void* sendbuf, void* recvbuf, scclRedOp_t op) {
  SparseCall call;
  call.ctx = &ctx;
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.op = op;
  return call;
}

void clearStats(scclSparsifier& sp) {
  sp.stats = scclSparseStats_t{};
  sp.stats.size = sizeof(scclSparseStats_t);
  sp.stats.kTarget = sp.k_target;
  sp.stats.threshold = sp.estimator != nullptr ? sp.estimator->currentThreshold() : 0.0;
  sp.reduction_memory.rank_counts.assign(static_cast<size_t>(sp.comm->nranks), 0);
}

// "auto": at calls 10, 100, 1000, ... the mean measured time of a call so far next to the model's
// prediction (SCCL_DEBUG=INFO), so that a wrong choice shows in the log of a real run.
void logMeasuredAgainstPredicted(const scclSparsifier& sp) {
  if (sp.predicted_call_us <= 0 || sp.iteration < 10) return;
  uint64_t power = 10;
  while (power < sp.iteration && power <= UINT64_MAX / 10) power *= 10;
  if (power != sp.iteration) return;
  const scclSparseStats_t& s = sp.stats;
  const double measured_us =
      (s.totalTimeSelectUs + s.totalTimeCommUs + s.totalTimeOtherUs) / double(sp.iteration);
  SCCL_INFO(LogSubsys::Coll,
            "auto: %s on rank %d, %llu calls: measured %.1f us per call (mean), predicted %.1f us "
            "(%.2fx)",
            sp.config.algorithm.c_str(), sp.comm->rank,
            static_cast<unsigned long long>(sp.iteration), measured_us, sp.predicted_call_us,
            measured_us / sp.predicted_call_us);
}

void recordCall(scclSparsifier& sp, const SparseCall& call, double total_us) {
  scclSparseStats_t& s = sp.stats;
  s.iteration = sp.iteration;
  s.kTarget = sp.k_target;
  s.kLocal = call.k_local;
  s.kGlobal = call.k_global;
  s.kMax = call.k_max;
  s.density = sp.count == 0 ? 0.0 : double(call.k_global) / double(sp.count);
  s.densityError = double(call.k_global) / double(sp.k_target) - 1.0;
  s.gatherInflation = call.k_global == 0
                          ? 0.0
                          : double(sp.comm->nranks) * double(call.k_max) / double(call.k_global);
  s.bytesSent = call.bytes_sent;
  s.bytesReceived = call.bytes_received;
  s.threshold = call.threshold;
  s.nonFinite = call.nonfinite_local;
  s.timeSelectUs = call.time_select_us;
  s.timeCommUs = call.time_comm_us;
  s.timeOtherUs = std::max(0.0, total_us - call.time_select_us - call.time_comm_us);
  s.totalBytesSent += s.bytesSent;
  s.totalBytesReceived += s.bytesReceived;
  s.totalTimeSelectUs += s.timeSelectUs;
  s.totalTimeCommUs += s.timeCommUs;
  s.totalTimeOtherUs += s.timeOtherUs;
  // Running mean over completed calls (the iteration counter counts them).
  double calls = double(std::max<uint64_t>(1, sp.iteration));
  s.meanAbsDensityError += (std::fabs(s.densityError) - s.meanAbsDensityError) / calls;
  logMeasuredAgainstPredicted(sp);
}

}  // namespace

// The record of one scclSparseAllreduce: the sparsifier, its call number and the reduction.
CallRecord sparseCallRecord(const scclSparsifier& sp, scclRedOp_t op, bool on_device) {
  CallRecord record = callRecord(CallOperation::SparseAllreduce);
  record.count = sp.count;
  record.dtype = static_cast<int16_t>(sp.dtype);
  record.redop = static_cast<int16_t>(op);
  record.object = sp.identity;
  record.config = sp.fingerprint;
  record.object_call = sp.iteration;
  record.flags = on_device ? CallRecord::kDevice : 0u;
  return record;
}

// The density of this call (the target, or the warm-up's step; sparse_config.h densityForCall),
// a pure function of the config and the agreed call number: k, the estimator's parameters, the
// statistics' target and the call fingerprint follow. Every rank computes the same, and the
// fingerprint makes a rank that set another density fail the call's agreement.
void applyCallDensity(scclSparsifier& sp) {
  const double density = densityForCall(sp.config, sp.iteration);
  if (density == sp.density) return;
  sp.density = density;
  sp.k_target = targetSelectionCount(density, sp.count);
  if (sp.estimator != nullptr) sp.estimator->setDensity(density, sp.count);
  sp.stats.kTarget = sp.k_target;
  uint64_t hash = sp.config_fingerprint;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&density);
  for (size_t i = 0; i < sizeof(density); ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  sp.fingerprint = hash;
}

scclResult_t sparsifierCreate(scclComm* comm, size_t count, scclDataType_t dtype,
                              const scclSparseConfig_t& config, scclSparsifier** out) {
  ResolvedSparseConfig resolved;
  SCCL_CHECK(resolveSparseConfig(config, &resolved));
  return sparsifierCreate(comm, count, dtype, resolved, out);
}

scclResult_t sparsifierCreate(scclComm* comm, size_t count, scclDataType_t dtype,
                              const ResolvedSparseConfig& config, scclSparsifier** out) {
  SCCL_REQUIRE_ARG(
      dtype == scclFloat32 || dtype == scclFloat16 || dtype == scclBfloat16 || dtype == scclFloat64,
      "sparsifier dtype %s: gradients must be float32, float16, bfloat16 or float64",
      dataTypeName(dtype));
  size_t bytes = 0;
  SCCL_REQUIRE_ARG(byteSize(count, scclFloat64, &bytes) && count <= (size_t{1} << 62),
                   "sparsifier count %zu is too large", count);
  auto sp = std::make_unique<scclSparsifier>();
  sp->comm = comm;
  sp->count = count;
  sp->dtype = dtype;
  sp->acc_dtype = dtype == scclFloat64 ? scclFloat64 : scclFloat32;
  sp->config = config;
  sp->density_ceiling = std::max(sp->config.density, sp->config.warmup_start);
  // "hierarchy": "node": the preset runs in an inner sparsifier over this rank's chunk
  // (sparsifier/node_hierarchy.h), which holds the axes and the residual.
  const bool hierarchical = sp->config.hierarchy == "node";
  if (!hierarchical) SCCL_CHECK(buildSparsifierAxes(*sp));
  sp->config_fingerprint = sparseConfigFingerprint(sp->config, count, dtype);
  sp->checkpoint_fingerprint = checkpointFingerprint(sp->config, count, dtype);
  applyCallDensity(*sp);  // the first call's density (the estimator was built for it)
  SCCL_CHECK(agreeOnCreation(*sp));
  if (hierarchical) {
    SCCL_CHECK(buildNodeHierarchy(*sp));
  } else {
    if (sp->reduction->prepare != nullptr)
      SCCL_CHECK(sp->reduction->prepare(reductionContext(*sp)));
    sp->residual.resize(count * accElementSize(*sp));
    sp->acc.resize(count * accElementSize(*sp));
    SCCL_CHECK(cpuKernels().fillZero(sp->residual.data(), sp->residual.size(), nullptr));
  }
  clearStats(*sp);
  SCCL_INFO(LogSubsys::Coll, "sparsifier %p rank %d: %zu x %s, %s, k = %llu",
            static_cast<void*>(sp.get()), comm->rank, count, dataTypeName(dtype),
            describeSparseConfig(sp->config).c_str(),
            static_cast<unsigned long long>(sp->k_target));
  registerHandle(sp.get(), scclSparsifier::kMagic);
  *out = sp.release();
  return scclSuccess;
}

void sparsifierDestroy(scclSparsifier* sp) {
  unregisterHandle(sp);
  sp->magic = 0;
  delete sp;
}

scclResult_t sparsifierReset(scclSparsifier* sp) {
  if (sp->hierarchy != nullptr) {
    if (sp->hierarchy->inner != nullptr) SCCL_CHECK(sparsifierReset(sp->hierarchy->inner));
    sp->hierarchy->device.reset();  // the next call's buffers decide again where it runs
    sp->iteration = 0;
    clearStats(*sp);
    return scclSuccess;
  }
  SCCL_CHECK(cpuKernels().fillZero(sp->residual.data(), sp->residual.size(), nullptr));
  sp->device.reset();  // the next call's buffers decide again where the residual lives
  sp->last_call_mask = nullptr;
  sp->residual_to_flush = false;
  sp->estimator->reset();
  sp->search->reset();
  sp->iteration = 0;
  sp->reduction_memory.union_slot_hint = 0;
  sp->reduction_memory.settled_plan = nullptr;
  clearStats(*sp);
  return scclSuccess;
}

scclResult_t sparseAllreduceOnDevice(scclSparsifier* sp, const void* sendbuf, void* recvbuf,
                                     scclRedOp_t op, void* stream, const DeviceCallRun& run) {
  const Clock::time_point start = Clock::now();
  applyCallDensity(*sp);
  const ReductionContext ctx = reductionContext(*sp);
  SparseCall call = callOn(ctx, sendbuf, recvbuf, op);
  // A stream-ordered call may be captured in a CUDA graph: no host exchange may enter it, so
  // its agreement is the reduction's own header checks (docs/reliability.md).
  if (!sp->config.stream_ordered)
    SCCL_CHECK(agreeOnCall(sp->comm, sparseCallRecord(*sp, op, true), nullptr,
                           describeCallDensity(*sp).c_str()));
  SCCL_CHECK(commRecordFailure(sp->comm, run(*sp, call, stream)));
  if (call.step_discarded) {
    sp->stats.nonFinite = call.nonfinite_local;
    if (discardedCallCounts(*sp)) ++sp->iteration;
    return scclSuccess;
  }
  ++sp->iteration;
  recordCall(*sp, call, microsecondsSince(start));
  return scclSuccess;
}

scclResult_t sparseAllreduce(scclSparsifier* sp, const void* sendbuf, void* recvbuf, scclRedOp_t op,
                             bool on_device, void* stream) {
  if (sp->hierarchy != nullptr) {
    if (!on_device) return hierarchicalAllreduceOnHost(*sp, sendbuf, recvbuf, op);
    const HierarchyDevice device{checkDeviceSparseAllreduce, createDeviceHierarchyMemory};
    return hierarchicalAllreduceOnDevice(*sp, sendbuf, recvbuf, op, stream, device);
  }
  if (on_device) {
    SCCL_CHECK(checkDeviceSparseAllreduce(*sp, stream));  // refused without side effects
    return sparseAllreduceOnDevice(sp, sendbuf, recvbuf, op, stream, runDeviceSparseAllreduce);
  }
  Clock::time_point start = Clock::now();
  if (sp->device != nullptr) {  // the same code as the reverse case (checkDeviceSparseAllreduce)
    return fail(scclInvalidUsage,
                "sendbuf/recvbuf are host memory, but this sparsifier's residual is in GPU memory "
                "since its first call; scclSparsifierReset starts it again");
  }
  applyCallDensity(*sp);
  const ReductionContext ctx = reductionContext(*sp);
  SparseCall call = callOn(ctx, sendbuf, recvbuf, op);
  sp->last_call_mask = nullptr;  // until this call completes
  SCCL_CHECK(agreeOnCall(sp->comm, sparseCallRecord(*sp, op, false), nullptr,
                         describeCallDensity(*sp).c_str()));
  call.acc = sp->acc.data();
  if (sp->reduction->needs_selection) {
    const void* residual = sp->config.error_feedback ? sp->residual.data() : nullptr;
    if (sp->reduction->fused_accumulate) {
      call.residual = residual;  // the reduction's own pass accumulates and selects
    } else {
      SCCL_CHECK(cpuKernels().accumulate(call.acc, residual, sp->acc_dtype, sendbuf, sp->dtype,
                                         sp->count, &call.nonfinite_local, nullptr));
      call.time_select_us = microsecondsSince(start);
    }
  }
  // Anything but an invalid argument (bad data from a peer, a mismatched call, a transport
  // failure) leaves the ranks out of step: the communicator is broken from here on.
  const bool flush = sp->residual_to_flush;
  SCCL_CHECK(
      commRecordFailure(sp->comm, flush ? runDenseReductionWithResidual(call, sp->residual.data())
                                        : sp->reduction->run(call)));
  if (call.step_discarded) {
    sp->stats.nonFinite = call.nonfinite_local;
    if (discardedCallCounts(*sp)) ++sp->iteration;
    return scclSuccess;
  }
  if (flush) sp->residual_to_flush = false;
  if (call.residual_updated) {
    if (sp->config.error_feedback) {
      sp->residual.swap(sp->acc);
    }
  }
  ++sp->iteration;
  sp->last_call_mask = flush ? maskEverything : sp->reduction->mask_sent;
  recordCall(*sp, call, microsecondsSince(start));
  return scclSuccess;
}

scclResult_t sparsifierSetDensity(scclSparsifier* sp, double density) {
  SCCL_REQUIRE_ARG(density > 0 && density <= 1, "density %g must be in (0, 1]", density);
  ResolvedSparseConfig& c = sp->config;
  SCCL_REQUIRE_ARG(c.reduction != "sketch" || density == c.density,
                   "density %g: the sketch reduction (s2) sizes its sketch from the density at "
                   "creation (%g) and cannot change it; create a new sparsifier",
                   density, c.density);
  SCCL_REQUIRE_ARG(c.reduction != "sync_free" || density <= sp->density_ceiling,
                   "density %g: the sync_free reduction's capacity was sized at creation for "
                   "density <= %g (max(density, densityWarmupStart)); create a new sparsifier "
                   "or start it with a higher densityWarmupStart",
                   density, sp->density_ceiling);
  if (sp->hierarchy != nullptr && sp->hierarchy->inner != nullptr)
    SCCL_CHECK(sparsifierSetDensity(sp->hierarchy->inner, density));
  c.density = density;
  c.warmup_calls = 0;  // an explicit density ends the warm-up
  c.warmup_start = 0;
  c.warmup_form = "exponential";
  sp->config_fingerprint = sparseConfigFingerprint(c, sp->count, sp->dtype);
  sp->density = 0;  // the next call applies the density and the fingerprint
  return scclSuccess;
}

scclResult_t sparsifierSwitchPreset(scclSparsifier* sp, const ResolvedSparseConfig& config) {
  SCCL_REQUIRE_ARG(sp->device == nullptr,
                   "a sparsifier whose residual is in GPU memory keeps its preset");
  // Built aside first, so that an error changes nothing.
  scclSparsifier next;
  next.magic = 0;  // never a handle
  next.comm = sp->comm;
  next.count = sp->count;
  next.dtype = sp->dtype;
  next.acc_dtype = sp->acc_dtype;
  next.config = config;
  SCCL_CHECK(buildSparsifierAxes(next));
  if (next.reduction->prepare != nullptr)
    SCCL_CHECK(next.reduction->prepare(reductionContext(next)));
  // The last call's mask outlives the switch ("auto" retunes right after a call, before the
  // caller masks): the sketch's blocks become an index list before its state goes.
  if (sp->last_call_mask == maskSketchBlocks) {
    sketchSentIndices(reductionContext(*sp), &sp->reduction_memory.global_indices);
    sp->last_call_mask = maskGlobalIndices;
  }
  const bool unsent = sp->reduction->needs_selection || sp->residual_to_flush;
  sp->residual_to_flush = unsent && !next.reduction->needs_selection && config.error_feedback;
  sp->config = std::move(next.config);
  sp->reduction = next.reduction;
  sp->reduction_memory.reduction_state = std::move(next.reduction_memory.reduction_state);
  sp->estimator = std::move(next.estimator);
  sp->search = std::move(next.search);
  sp->density_ceiling = std::max(sp->config.density, sp->config.warmup_start);
  sp->config_fingerprint = sparseConfigFingerprint(sp->config, sp->count, sp->dtype);
  sp->density = 0;  // the next call gives the new estimator its density and the fingerprint
  SCCL_INFO(LogSubsys::Coll, "sparsifier %p rank %d: now %s%s", static_cast<void*>(sp),
            sp->comm->rank, describeSparseConfig(sp->config).c_str(),
            sp->residual_to_flush ? " (the next call sends the residual with the gradient)" : "");
  return scclSuccess;
}

bool discardedCallCounts(const scclSparsifier& sp) {
  return sp.search->soleSelector(sp.iteration) >= 0;
}

ReductionContext reductionContext(scclSparsifier& sp) {
  ReductionMemory& m = sp.reduction_memory;
  return ReductionContext{sp.comm,
                          sp.count,
                          sp.dtype,
                          sp.acc_dtype,
                          sp.config,
                          *sp.reduction,
                          *sp.estimator,
                          *sp.search,
                          sp.iteration,
                          sp.k_target,
                          sp.fingerprint,
                          sp.density_ceiling,
                          sp.stats.kLocal,
                          m.rank_counts,
                          m.union_slot_hint,
                          m.local_indices,
                          m.gathered_indices,
                          m.global_indices,
                          m.values,
                          m.candidate_indices,
                          m.candidate_values,
                          m.host_staging,
                          m.candidate_room,
                          m.reduction_state,
                          m.settled_plan,
                          m.settled_first_call};
}

scclResult_t sparsifierMaskSent(scclSparsifier& sp, void* buffer, scclDataType_t dtype) {
  if (sp.last_call_mask == nullptr) return scclSuccess;  // nothing sent
  return sp.last_call_mask(reductionContext(sp), buffer, dtype);
}

scclResult_t sparsifierStats(scclSparsifier* sp, scclSparseStats_t* stats) {
  if (sp->hierarchy != nullptr) {  // this rank's residual is the inner one's, over its chunk
    scclSparseStats_t inner{};
    inner.size = sizeof(inner);
    if (sp->hierarchy->inner != nullptr) SCCL_CHECK(sparsifierStats(sp->hierarchy->inner, &inner));
    sp->stats.residualNorm = inner.residualNorm;
  } else if (sp->device != nullptr) {
    SCCL_CHECK(deviceRefreshStats(*sp));
    SCCL_CHECK(deviceResidualNorm(*sp, &sp->stats.residualNorm));
  } else {
    AbsMoments moments;
    if (sp->count > 0) {
      SCCL_CHECK(cpuKernels().absMoments(sp->residual.data(), sp->acc_dtype, 0, sp->count, 0.0,
                                         false, &moments, nullptr));
    }
    sp->stats.residualNorm = std::sqrt(moments.sum_sq);
  }
  sp->stats.predictedTimeUs = sp->predicted_call_us;
  sp->stats.autoSwitches = sp->auto_switches;
  sp->stats.autoSettled = sp->auto_settled ? 1 : 0;
  size_t bytes = std::min(stats->size, sizeof(scclSparseStats_t));
  scclSparseStats_t copy = sp->stats;
  copy.size = bytes;
  std::memcpy(stats, &copy, bytes);
  return scclSuccess;
}

}  // namespace sccl
