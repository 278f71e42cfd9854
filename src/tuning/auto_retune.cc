#include "tuning/auto_retune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "core/settings.h"
#include "sparsifier/sparsifier.h"

namespace sccl {
namespace {

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

uint64_t toNanoseconds(double seconds) {
  return uint64_t(std::clamp(seconds * 1e9, 0.0, 1e18));
}

struct Measurement {
  double total_s = 0, comm_s = 0, local_s = 0;
};

// Step 2: this rank's medians of the window, the maximum over ranks.
scclResult_t agreeOnWindow(scclSparsifier* sp, const AutoRetune& r, Measurement* out) {
  uint64_t agreed[3] = {toNanoseconds(medianOf(r.total_s)), toNanoseconds(medianOf(r.comm_s)),
                        toNanoseconds(medianOf(r.local_s))};
  scclComm* comm = sp->comm;
  if (comm->nranks > 1) {
    SCCL_CHECK(commRecordFailure(
        comm, comm->transport->allReduce(agreed, agreed, 3, scclUint64, ReduceOp::Max)));
  }
  out->total_s = double(agreed[0]) * 1e-9;
  out->comm_s = double(agreed[1]) * 1e-9;
  out->local_s = double(agreed[2]) * 1e-9;
  return scclSuccess;
}

void record(RetuneCandidate& c, const Measurement& m) {
  c.measured = true;
  c.measured_s = m.total_s;
  c.measured_comm_s = m.comm_s;
  c.measured_local_s = m.local_s;
}

bool within(double a, double b, double tolerance) {
  return a <= b * (1 + tolerance) && a * (1 + tolerance) >= b;
}

std::string describeDecision(const AutoRetune& r, int measured, const RetuneDecision& d) {
  const RetuneCandidate& m = r.candidates[size_t(measured)];
  const double predicted = m.predicted_comm_s + m.predicted_local_s;
  char text[256];
  std::snprintf(text, sizeof(text),
                "auto: %s measured %.3f ms per call (comm %.3f, local %.3f; median of %d calls, "
                "slowest rank), predicted %.3f ms (%.2fx); estimates ms:",
                m.algorithm, m.measured_s * 1e3, m.measured_comm_s * 1e3, m.measured_local_s * 1e3,
                kRetuneWindowCalls, predicted * 1e3,
                predicted > 0 ? m.measured_s / predicted : 0.0);
  std::string out = text;
  for (const RetuneCandidate& c : r.candidates) {
    if (!c.usable) continue;
    std::snprintf(text, sizeof(text), " %s %.3f%s", c.algorithm, c.estimate_s * 1e3,
                  c.measured ? " (measured)" : "");
    out += text;
  }
  const char* next = r.candidates[size_t(d.next)].algorithm;
  std::snprintf(text, sizeof(text), d.settled ? " -> %s stays" : " -> trying %s", next);
  return out + text;
}

}  // namespace

ResolvedSparseConfig autoPresetConfig(const scclSparsifier& sp, const char* algorithm,
                                      const std::string& density_correction) {
  ResolvedSparseConfig config = sp.config;
  const PresetEntry* preset = findPreset(algorithm);
  config.algorithm = preset->name;
  config.estimator = preset->estimator;
  config.search = preset->search;
  config.reduction = preset->reduction;
  config.density_correction = density_correction;
  return config;
}

RetuneDecision decideRetune(std::vector<RetuneCandidate>& candidates, int current,
                            double tolerance) {
  const RetuneCandidate& now = candidates[size_t(current)];
  // What the measurement says about the model: its communication and its local work apart (a
  // part predicted as 0 keeps the model's 0 for every candidate).
  const double comm_ratio =
      now.predicted_comm_s > 0 ? now.measured_comm_s / now.predicted_comm_s : 1.0;
  const double local_ratio =
      now.predicted_local_s > 0 ? now.measured_local_s / now.predicted_local_s : 1.0;
  int fastest_measured = -1;
  int fastest_untried = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    RetuneCandidate& c = candidates[i];
    if (!c.usable) continue;
    if (c.measured) {
      c.estimate_s = c.measured_s;
      if (fastest_measured < 0 || c.estimate_s < candidates[size_t(fastest_measured)].estimate_s)
        fastest_measured = int(i);
    } else {
      c.estimate_s = c.predicted_comm_s * comm_ratio + c.predicted_local_s * local_ratio;
      if (fastest_untried < 0 || c.estimate_s < candidates[size_t(fastest_untried)].estimate_s)
        fastest_untried = int(i);
    }
  }
  RetuneDecision decision;
  decision.next = current;
  decision.settled = true;
  if (fastest_measured < 0) return decision;  // not reached: `now` is measured
  const double best = candidates[size_t(fastest_measured)].estimate_s;
  // Below the fastest measured time, or within kRetuneTieMargin above it: the model cannot order
  // presets that close (micro and exdyna), so a trial's measurement decides.
  const bool trial = fastest_untried >= 0 && candidates[size_t(fastest_untried)].estimate_s <=
                                                 best * (1 + std::min(kRetuneTieMargin, tolerance));
  decision.next = trial ? fastest_untried : fastest_measured;
  decision.settled = !trial;
  return decision;
}

std::shared_ptr<AutoRetune> makeAutoRetune(const AutoChoice& choice,
                                           const std::string& density_correction) {
  if (paramAutoRetune() == 0) return nullptr;
  auto retune = std::make_shared<AutoRetune>();
  retune->tolerance = double(std::clamp<int64_t>(paramAutoRetuneTolerance(), 1, 1000)) / 100.0;
  retune->density_correction = density_correction;
  for (const AutoCandidate& a : choice.candidates) {
    if (a.node_hierarchy) continue;  // retuning switches among the flat forms only
    RetuneCandidate c;
    c.algorithm = a.algorithm;
    c.usable = a.local_s_per_element >= 0;
    c.predicted_comm_s = a.predicted.comm_seconds;
    c.predicted_local_s = a.predicted.compute_seconds + a.predicted.aggregate_seconds;
    if (a.algorithm == choice.algorithm) retune->current = int(retune->candidates.size());
    retune->candidates.push_back(c);
  }
  if (retune->current < 0) return nullptr;
  return retune;
}

scclResult_t autoRetuneAfterCall(scclSparsifier* sp) {
  AutoRetune& r = *sp->auto_retune;
  if (sp->device != nullptr) {  // device buffers: their calls may not hold a host exchange
    r.settled = true;
    r.off = true;
  }
  sp->auto_settled = r.settled;
  if (r.off || sp->iteration == r.last_iteration) return scclSuccess;
  r.last_iteration = sp->iteration;
  if (r.settled && !r.checking) {
    if (sp->iteration < r.next_check) return scclSuccess;
    r.checking = true;  // the preset has run all along: no calls to skip
    r.calls_since_choice = kRetuneSettleCalls;
  }
  if (++r.calls_since_choice <= kRetuneSettleCalls) return scclSuccess;
  const scclSparseStats_t& s = sp->stats;
  r.total_s.push_back((s.timeSelectUs + s.timeCommUs + s.timeOtherUs) * 1e-6);
  r.comm_s.push_back(s.timeCommUs * 1e-6);
  r.local_s.push_back((s.timeSelectUs + s.timeOtherUs) * 1e-6);
  if (r.total_s.size() < size_t(kRetuneWindowCalls)) return scclSuccess;

  Measurement measurement;
  SCCL_CHECK(agreeOnWindow(sp, r, &measurement));
  r.total_s.clear();
  r.comm_s.clear();
  r.local_s.clear();
  r.calls_since_choice = 0;
  const int measured = r.current;
  RetuneCandidate& current = r.candidates[size_t(measured)];
  if (r.checking) {
    r.checking = false;
    while (r.next_check <= sp->iteration && r.next_check <= UINT64_MAX / 10) r.next_check *= 10;
    if (within(measurement.total_s, current.measured_s, r.tolerance)) {
      if (sp->comm->rank == 0)
        SCCL_INFO(LogSubsys::Coll,
                  "auto: %s still %.3f ms per call (was %.3f); next check at call %llu",
                  current.algorithm, measurement.total_s * 1e3, current.measured_s * 1e3,
                  static_cast<unsigned long long>(r.next_check));
      return scclSuccess;
    }
    // The time moved by more than the tolerance: what the other presets measured is stale.
    for (RetuneCandidate& c : r.candidates) c.measured = false;
  }
  record(current, measurement);
  const RetuneDecision decision = decideRetune(r.candidates, r.current, r.tolerance);
  if (sp->comm->rank == 0)
    SCCL_INFO(LogSubsys::Coll, "%s", describeDecision(r, measured, decision).c_str());
  r.settled = decision.settled;
  sp->auto_settled = r.settled;
  if (decision.next == r.current) return scclSuccess;
  RetuneCandidate& next = r.candidates[size_t(decision.next)];
  if (sparsifierSwitchPreset(sp, autoPresetConfig(*sp, next.algorithm, r.density_correction)) !=
      scclSuccess) {
    // The same config on every rank fails the same way: all stay where they are. The call itself
    // succeeded, so its result stands.
    SCCL_WARN(LogSubsys::Coll, "auto: rank %d cannot switch to %s (%s); %s stays", sp->comm->rank,
              next.algorithm, threadLastError().c_str(), current.algorithm);
    next.usable = false;
    r.settled = true;
    sp->auto_settled = true;
    return scclSuccess;
  }
  r.current = decision.next;
  ++r.switches;
  sp->auto_switches = uint64_t(r.switches);
  sp->predicted_call_us = (next.predicted_comm_s + next.predicted_local_s) * 1e6;
  return scclSuccess;
}

}  // namespace sccl
