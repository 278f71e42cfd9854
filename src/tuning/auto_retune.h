// "algorithm": "auto" after creation: the choice made from the cost model
// (tuning/auto_choice.h) is checked against the measured time of real calls, and changed where
// those say another candidate may be faster.
//
// Steps, on every rank, inside scclSparseAllreduce, at the same calls (the ranks' calls are
// numbered alike; a discarded call counts for nothing):
//  1. after a choice, skip kRetuneSettleCalls calls (the estimator's threshold converging, cold
//     caches), then record kRetuneWindowCalls calls: this rank's time of each, its communication
//     and its local work (select + other, scclSparseStats_t);
//  2. at the window's last call, agree on the medians: the maximum over ranks of each, in
//     nanoseconds (one all-reduce of three integers), so that every rank decides from the same
//     numbers;
//  3. decide (decideRetune, a pure function of the agreed numbers): every untried candidate's
//     prediction is corrected by the measured/predicted ratios of the preset just measured
//     (communication and local work apart); a measured candidate's estimate is its measurement.
//     The fastest untried estimate runs the next window if it is below the fastest measured
//     time or at most kRetuneTieMargin above it (the tolerance, if smaller): the model cannot
//     order presets that close (micro and exdyna, predicted 0.6-11 % apart in the logs of
//     2026-12-01, measured 0.60-1.81x apart at 25M on the emulated cluster: the calibration's 64K
//     elements fit in L2; docs/results/cost_model.md). Otherwise the fastest measured preset
//     stays. Each candidate runs at most one window, so auto switches at most once per other
//     candidate and once back to the fastest measured, and settles on the fastest it measured;
//  4. a switch rebuilds the sparsifier in place (sparsifierSwitchPreset): the residual carries
//     over, and a switch to dense sends it with the next call's gradient;
//  5. settled, it checks again at calls 100, 1000, 10000, ... (one window each, no calls
//     skipped): a time within the tolerance of the settled preset's measurement changes nothing;
//     a time beyond it (the link, the load or the gradients changed) forgets every other
//     measurement and decides as in step 3 from the new one.
//
// SCCL_AUTO_RETUNE=0 keeps the creation's choice; SCCL_AUTO_RETUNE_TOLERANCE (percent, default 25)
// sets the tolerance of step 5 (and caps step 3's tie margin). Device buffers: auto does not
// re-decide (the device path's calls may be captured in a CUDA graph, where no host exchange may
// run).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"
#include "tuning/auto_choice.h"

struct scclSparsifier;

namespace sccl {

constexpr int kRetuneSettleCalls = 3;
constexpr int kRetuneWindowCalls = 8;
constexpr uint64_t kRetuneFirstCheck = 100;  // then every 10x
// Step 3's tie: an untried candidate estimated at most this much slower than the fastest measured
// (or the tolerance, if smaller) gets one trial window. 10 %: the issue's "within 10 % of the
// fastest" is the closeness at which the order of two presets matters to a user.
constexpr double kRetuneTieMargin = 0.10;

// One candidate as the re-decision sees it: the creation's prediction and, once it ran a window,
// the agreed measurement (seconds).
struct RetuneCandidate {
  const char* algorithm = nullptr;
  bool usable = false;  // the creation could calibrate it
  double predicted_comm_s = 0;
  double predicted_local_s = 0;
  bool measured = false;
  double measured_s = 0;
  double measured_comm_s = 0;
  double measured_local_s = 0;
  double estimate_s = 0;  // the last decision's estimate (the measurement, once measured)
};

struct RetuneDecision {
  int next = -1;         // the candidate to run next (may be the current one)
  bool settled = false;  // no trial window: `next` stays (until a periodic check)
};

// Step 3 alone. `current` has just been measured (its measured* fields set); `tolerance` bounds
// the tie margin. Fills every candidate's estimate_s.
RetuneDecision decideRetune(std::vector<RetuneCandidate>& candidates, int current,
                            double tolerance);

// The config of preset `algorithm` with everything else the sparsifier has now (density, error
// feedback, non-finite policy, warm-up, ...): "auto" leaves the axes to the preset;
// density_correction is the caller's setting (empty: the preset's own).
ResolvedSparseConfig autoPresetConfig(const scclSparsifier& sp, const char* algorithm,
                                      const std::string& density_correction);

struct AutoRetune {
  std::vector<RetuneCandidate> candidates;
  int current = -1;
  bool settled = false;                     // a preset is chosen; only the periodic checks measure
  bool checking = false;                    // a periodic check's window is running
  bool off = false;                         // device buffers: no more windows
  uint64_t next_check = kRetuneFirstCheck;  // the call number of the next periodic check
  double tolerance = 0.25;
  std::string density_correction;  // the caller's setting (empty: each preset's own)
  uint64_t last_iteration = 0;     // the sparsifier's iteration when last seen
  int calls_since_choice = 0;
  std::vector<double> total_s, comm_s, local_s;  // this window's calls on this rank
  int switches = 0;
};

// After scclSparsifierCreate chose `choice.algorithm`: the re-decision's state, or null where it
// is off (SCCL_AUTO_RETUNE=0). density_correction: the caller's setting (empty: each preset's).
std::shared_ptr<AutoRetune> makeAutoRetune(const AutoChoice& choice,
                                           const std::string& density_correction);

// After every successful host-buffer scclSparseAllreduce of an "auto" sparsifier (collective at
// the window's last call).
scclResult_t autoRetuneAfterCall(scclSparsifier* sp);

}  // namespace sccl
