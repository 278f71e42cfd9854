#include "core/patient_wait.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace sccl {
namespace {

thread_local bool t_patient = false;

constexpr std::chrono::microseconds kYieldFor{1000};
constexpr std::chrono::microseconds kLongestSleep{1000};

}  // namespace

PatientWaitScope::PatientWaitScope(bool patient) : previous_(t_patient) {
  t_patient = t_patient || patient;
}

PatientWaitScope::~PatientWaitScope() { t_patient = previous_; }

bool inPatientWait() { return t_patient; }

void pauseBetweenPolls(std::chrono::steady_clock::time_point wait_start) {
  if (t_patient) {
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - wait_start);
    if (waited >= kYieldFor) {
      std::this_thread::sleep_for(std::min(kLongestSleep, waited / 8));
      return;
    }
  }
  sched_yield();
}

}  // namespace sccl
