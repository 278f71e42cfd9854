// The algorithm registry: presets (named rows of the three axes of ARCHITECTURE.md) and the
// reductions (how a selection travels), which are the code of each algorithm family.
//
// A reduction runs one scclSparseAllreduce call after the sparsifier has accumulated the
// gradient: it selects (through the estimator and search space), exchanges, writes recvbuf,
// leaves the new residual in `call.acc` (the sparsifier swaps it in) and records its statistics.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class KernelBackend;
class DeviceStaging;
struct ReductionContext;

// One call's arguments and outcome, shared by the sparsifier and the reduction.
struct SparseCall {
  const ReductionContext* ctx = nullptr;  // the sparsifier as the reduction sees it
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  scclRedOp_t op = scclSum;
  void* acc = nullptr;  // residual + gradient (float32, or float64 for float64 data)
  // For a reduction that accumulates in its own pass (ReductionEntry::fused_accumulate): the
  // residual to add (null without error feedback) and, on device buffers, the device word the
  // kernels count non-finite values into (null on host buffers). Other reductions find acc
  // already accumulated and nonfinite_local set.
  const void* residual = nullptr;
  uint64_t* nonfinite_word = nullptr;
  // Where acc lives: null kernels and device on host buffers (the CPU kernels read the host
  // arrays); on device buffers the CUDA backend, the caller's stream and the device staging of
  // the index and value arrays (kernels/device_staging.h).
  const KernelBackend* kernels = nullptr;
  DeviceStaging* device = nullptr;
  void* stream = nullptr;
  uint64_t nonfinite_local = 0;  // non-finite values in acc on this rank
  // Set by the reduction.
  bool residual_updated = false;  // acc now holds the new residual (else the residual is kept)
  bool step_discarded = false;    // non-finite step discarded under scclNonFinitePropagate
  // The call's outcome and counts stay in the kernels' memory (a call that reads nothing back):
  // the statistics below are read when asked, and a discarded call is not known as such here.
  bool outcome_on_device = false;
  double threshold = 0;
  uint64_t k_local = 0, k_global = 0, k_max = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
  double time_select_us = 0, time_comm_us = 0;
};

struct PresetEntry {
  const char* name;
  const char* description;
  const char* estimator;
  const char* search;
  const char* reduction;
  // The in-call density correction the preset applies where the estimator and search space allow
  // it (algorithms/density_correction.h): "histogram" or "none".
  const char* density_correction;
};

// State a reduction keeps per sparsifier (the sketch reduction's table and bitmaps); owned by
// the sparsifier, so every sparsifier has its own.
struct ReductionState {
  virtual ~ReductionState() = default;
};

struct ReductionEntry {
  const char* name;
  const char* description;
  // false: nothing is accumulated, the estimator and search space are unused (dense). The
  // sketch reduction accumulates but selects blocks itself (the estimator and search are unused).
  bool needs_selection;
  scclResult_t (*run)(SparseCall& call);
  // Called once when a sparsifier is created, after the ranks agreed on its config (null:
  // nothing to prepare): checks what depends on the count and builds ctx.reduction_state.
  scclResult_t (*prepare)(const ReductionContext& ctx);
  // true: run() accumulates the gradient itself from SparseCall::residual and sendbuf (the
  // gather's pass that also selects, KernelBackend::accumulateSelect; the S2 call's accumulate,
  // which counts into its header); false: the caller accumulates into acc first.
  bool fused_accumulate;
  // true: scclSparseAllreduce runs it on device buffers too (the CUDA backend's path, cuda/;
  // the sync_free reduction there only with the scaling or fixed estimator, whose threshold the
  // device can hold). false: host buffers only (dense: GPU users call scclAllReduce).
  bool has_device_path;
  // scclSparsifierMaskSent after a completed call on host buffers: zeroes in `buffer` (ctx.count
  // elements of dtype) what the call's output carries (algorithms/sent_mask.h).
  scclResult_t (*mask_sent)(const ReductionContext& ctx, void* buffer, scclDataType_t dtype);
};

// The algorithm name that is no preset: the cost model chooses one at sparsifier creation
// (tuning/auto_choice.h, called by scclSparsifierCreate).
inline constexpr const char* kAutoAlgorithm = "auto";

const std::vector<PresetEntry>& presetRegistry();
const std::vector<ReductionEntry>& reductionRegistry();
const PresetEntry* findPreset(const char* name);
const ReductionEntry* findReduction(const char* name);

}  // namespace sccl
