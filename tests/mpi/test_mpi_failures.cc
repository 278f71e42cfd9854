// Failure behaviour of the MPI transport, each on a transport of its own so that the rest of the
// run stays sane: a receive that never matches times out; a rank that skips a collective makes
// the others time out and learn of it through failure notices; abort releases peers blocked in a
// collective and a local wait blocked on another thread. A broken transport keeps failing fast
// with the same code.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "mpi_test_support.h"

using namespace sccl_mpi_test;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("mpi failures: a receive without a sender times out, then fails fast",
          "[mpi][failures]") {
  auto transport = makeWorldTransport(300);
  REQUIRE(transport);
  // Static: MPI keeps the abandoned receive and could write here later.
  static int never_filled = 0;
  Clock::time_point start = Clock::now();
  scclResult_t result = transport->recv(&never_filled, sizeof(int), transport->rank(), 77);
  // Every rank times out on its own receive; a peer's notice may get here first.
  CHECK((result == scclTimeout || result == scclRemoteError));
  if (result == scclTimeout) CHECK_THAT(sccl::threadLastError(), Catch::Contains("recv"));
  CHECK(secondsSince(start) < 10.0);
  start = Clock::now();
  CHECK(transport->barrier() == result);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("earlier failure"));
  CHECK(secondsSince(start) < 0.1);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("mpi failures: a rank that skips a barrier times the others out", "[mpi][failures]") {
  if (worldSize() < 2) return;
  auto transport = makeWorldTransport(500);
  REQUIRE(transport);
  int saw_timeout = 0;
  if (worldRank() != 0) {
    Clock::time_point start = Clock::now();
    scclResult_t result = transport->barrier();
    // The first rank to time out notifies the others, which may then stop with RemoteError.
    CHECK((result == scclTimeout || result == scclRemoteError));
    saw_timeout = result == scclTimeout;
    CHECK(secondsSince(start) < 10.0);
    CHECK(transport->barrier() == result);
  }
  int anyone_timed_out = 0;
  MPI_Allreduce(&saw_timeout, &anyone_timed_out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(anyone_timed_out == 1);
  if (worldRank() == 0) {
    // The skipper's next operation learns that its peers gave up.
    CHECK(transport->barrier() == scclRemoteError);
    CHECK_THAT(sccl::threadLastError(), Catch::Contains("gave up on the communicator"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("mpi failures: abort on one rank releases the peers in a collective", "[mpi][failures]") {
  if (worldSize() < 2) return;
  auto transport = makeWorldTransport(30000);
  REQUIRE(transport);
  if (worldRank() == 0) {
    transport->abort();
    transport.reset();  // the abort notices leave here, without blocking
  } else {
    Clock::time_point start = Clock::now();
    CHECK(transport->barrier() == scclRemoteError);
    CHECK_THAT(sccl::threadLastError(), Catch::Contains("rank 0 aborted"));
    CHECK(secondsSince(start) < 10.0);  // well before the 30 s deadline
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("mpi failures: abort from another thread ends a blocked wait", "[mpi][failures]") {
  auto transport = makeWorldTransport(30000);
  REQUIRE(transport);
  static int never_filled = 0;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    transport->abort();  // no MPI call: safe at any thread level
  });
  Clock::time_point start = Clock::now();
  scclResult_t result = transport->recv(&never_filled, sizeof(int), transport->rank(), 78);
  aborter.join();
  CHECK(result == scclRemoteError);
  CHECK(secondsSince(start) < 10.0);
  CHECK(transport->barrier() == scclRemoteError);
  transport.reset();
  MPI_Barrier(MPI_COMM_WORLD);
}
