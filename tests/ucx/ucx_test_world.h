// The world of the UCX multi-process tests (tests/ucx/ucx_bootstrap_launch.cc): N processes
// started by the test binary itself and joined through the unique-id bootstrap alone, no MPI.
// Every process runs the same Catch2 session; the test cases reach the others through
// ucxWorld().comm (a sparsecoll communicator over the UCX transport) and make fresh transports
// with makeUcxTransport.
#pragma once

#include <cstdint>
#include <memory>

#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/transport.h"

namespace sccl_ucx_test {

struct World {
  int rank = 0;
  int nranks = 1;
  scclComm_t comm = nullptr;  // transport "ucx"
  int killed_rank = -1;       // --kill R: the rank the peer-killed test kills (else -1)
};

const World& ucxWorld();

// A UCX transport of its own (with its own bootstrap, from a unique id rank 0 makes and
// broadcasts over the world communicator). Null members when creation failed.
struct TestTransport {
  std::unique_ptr<sccl::Bootstrap> bootstrap;
  std::unique_ptr<sccl::Transport> transport;
  sccl::Transport* operator->() const { return transport.get(); }
  explicit operator bool() const { return transport != nullptr; }
};
TestTransport makeUcxTransport(int64_t timeout_ms = 60000);

// A barrier over the world communicator (true on success).
bool worldBarrier();

}  // namespace sccl_ucx_test
