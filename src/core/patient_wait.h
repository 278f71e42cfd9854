// A hint from the caller to a transport's wait loop, on this thread: the waits started inside the
// scope are expected to last long, because another rank is busy computing (rank 0 calibrating
// "auto"'s candidates while the others wait in a broadcast: tuning/auto_choice.cc).
//
// Why: the MPI and UCX waits poll and yield the core between polls (sched_yield), which keeps a
// short wait short. But under Linux's autogroup, ranks started in different sessions (every rank
// of the emulated cluster, any launcher that calls setsid) are in different scheduling groups, and
// a yield does not hand the core to a process of another group: rank 0's calibration then ran
// 2x slower with 3 waiting ranks on its 2 cores (docs/results/cost_model.md). Sleeping between
// polls cedes the core whatever the group, but made every short collective slower (the probe's
// latency doubled when all waits slept), so only waits known to be long sleep.
//
// Inside a PatientWaitScope a wait yields for its first 1 ms, then sleeps between polls for 1/8
// of the time waited so far, at most 1 ms (so a wait overshoots its end by up to 12 % or 1 ms).
// Measured (emulated cluster, 4 ranks pinned 2 per core, autogroup on): rank 0's calibration
// 39-45 ms with yielding waiters, 25-30 ms with 2 ms then 1/32, 19-24 ms with these.
#pragma once

#include <chrono>

namespace sccl {

class PatientWaitScope {
 public:
  explicit PatientWaitScope(bool patient = true);
  ~PatientWaitScope();
  PatientWaitScope(const PatientWaitScope&) = delete;
  PatientWaitScope& operator=(const PatientWaitScope&) = delete;

 private:
  bool previous_;
};

// Whether this thread is inside a PatientWaitScope that asked for patience.
bool inPatientWait();

// The pause between two polls of a wait that began at `wait_start` and has found nothing to do:
// a sched_yield, or inside a PatientWaitScope after 1 ms a sleep (above).
void pauseBetweenPolls(std::chrono::steady_clock::time_point wait_start);

}  // namespace sccl
