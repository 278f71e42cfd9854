// core/patient_wait.h: inside a PatientWaitScope a wait that has lasted past 1 ms sleeps between
// polls (at least the documented pause: sleep_for never returns early); the scope nests and ends.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "core/patient_wait.h"

namespace {

using Clock = std::chrono::steady_clock;

// The pause of a wait that began `waited` ago, in microseconds.
double pauseMicroseconds(std::chrono::milliseconds waited) {
  const Clock::time_point start = Clock::now();
  sccl::pauseBetweenPolls(start - waited);
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("a patient wait sleeps between polls once it has lasted", "[core][patient_wait]") {
  CHECK_FALSE(sccl::inPatientWait());
  {
    const sccl::PatientWaitScope patient;
    CHECK(sccl::inPatientWait());
    CHECK(pauseMicroseconds(std::chrono::milliseconds(16)) >= 1000.0);  // min(1 ms, 16 ms / 8)
    CHECK(pauseMicroseconds(std::chrono::milliseconds(4)) >= 500.0);    // 4 ms / 8
    {
      const sccl::PatientWaitScope not_asked(false);  // an inner scope does not end the outer
      CHECK(sccl::inPatientWait());
      CHECK(pauseMicroseconds(std::chrono::milliseconds(16)) >= 1000.0);
    }
    CHECK(sccl::inPatientWait());
    // Per thread: another thread's waits stay short.
    bool other_patient = true;
    std::thread other([&] { other_patient = sccl::inPatientWait(); });
    other.join();
    CHECK_FALSE(other_patient);
  }
  CHECK_FALSE(sccl::inPatientWait());
  {
    const sccl::PatientWaitScope not_asked(false);
    CHECK_FALSE(sccl::inPatientWait());
  }
}
