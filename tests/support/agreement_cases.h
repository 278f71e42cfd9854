// Mismatched collective calls for the call-agreement tests (comm/call_agreement.h), shared by the
// in-process (tests/reliability), MPI (tests/mpi) and UCX (tests/ucx) suites: each case says
// what every rank calls; every rank must get scclInvalidUsage with a message naming the field.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl_test {

inline int commSize(scclComm_t comm) {
  int nranks = 0;
  scclCommCount(comm, &nranks);
  return nranks;
}

// Collectives on buffers of their own, large enough for the arguments (8 bytes per element).
inline scclResult_t allReduceOf(scclComm_t comm, size_t count, scclDataType_t dtype,
                                scclRedOp_t op) {
  std::vector<double> send(count + 1, 1.0), recv(count + 1, 0.0);
  return scclAllReduce(send.data(), recv.data(), count, dtype, op, comm, nullptr);
}

inline scclResult_t allGatherOf(scclComm_t comm, size_t count, scclDataType_t dtype) {
  std::vector<double> send(count + 1, 1.0), recv((count + 1) * size_t(commSize(comm)), 0.0);
  return scclAllGather(send.data(), recv.data(), count, dtype, comm, nullptr);
}

inline scclResult_t broadcastOf(scclComm_t comm, size_t count, int root) {
  std::vector<float> buf(count + 1, 1.0f);
  return scclBroadcast(buf.data(), buf.data(), count, scclFloat32, root, comm, nullptr);
}

struct AgreementCase {
  const char* name;
  int min_ranks;
  std::function<scclResult_t(int rank, scclComm_t comm)> call;
  std::vector<std::string> mentions;  // each must be in the message (with 2 or more ranks)
};

// The dense cases: rank 0 differs from all others (the last rank, where said).
inline std::vector<AgreementCase> denseAgreementCases() {
  using C = scclComm_t;
  return {
      {"all-reduce count 8 vs 16",
       2,
       [](int r, C c) { return allReduceOf(c, r == 0 ? 8 : 16, scclFloat32, scclSum); },
       {"scclAllReduce", "count is 8 on rank(s) 0 but 16 on rank(s) 1"}},
      {"all-reduce count 8 vs 0",
       2,
       [](int r, C c) { return allReduceOf(c, r == 0 ? 8 : 0, scclFloat32, scclSum); },
       {"count is 8 on rank(s) 0 but 0 on rank(s) 1"}},
      {"all-reduce counts 8, 8, 8, 9",
       4,
       [](int r, C c) { return allReduceOf(c, r == 3 ? 9 : 8, scclFloat32, scclSum); },
       {"count is 8 on rank(s) 0, 1, 2", "but 9 on rank(s) 3"}},
      {"all-reduce float32 vs float64",
       2,
       [](int r, C c) { return allReduceOf(c, 8, r == 0 ? scclFloat32 : scclFloat64, scclSum); },
       {"dtype is float32 on rank(s) 0 but float64 on rank(s) 1"}},
      {"all-reduce float32 vs int32",
       2,
       [](int r, C c) { return allReduceOf(c, 8, r == 0 ? scclFloat32 : scclInt32, scclSum); },
       {"dtype is float32 on rank(s) 0 but int32 on rank(s) 1"}},
      {"all-reduce sum vs avg",
       2,
       [](int r, C c) { return allReduceOf(c, 8, scclFloat32, r == 0 ? scclSum : scclAvg); },
       {"reduction is scclSum on rank(s) 0 but scclAvg on rank(s) 1"}},
      {"all-reduce vs barrier",
       2,
       [](int r, C c) { return r == 0 ? allReduceOf(c, 8, scclFloat32, scclSum) : scclBarrier(c); },
       {"operation is scclAllReduce on rank(s) 0 but scclBarrier on rank(s) 1"}},
      {"all-reduce vs broadcast",
       2,
       [](int r, C c) {
         return r == 0 ? allReduceOf(c, 8, scclFloat32, scclSum) : broadcastOf(c, 8, 0);
       },
       {"scclAllReduce on rank(s) 0 but scclBroadcast on rank(s) 1"}},
      {"all-reduce vs all-gather",
       2,
       [](int r, C c) {
         return r == 0 ? allReduceOf(c, 8, scclFloat32, scclSum) : allGatherOf(c, 8, scclFloat32);
       },
       {"scclAllReduce on rank(s) 0 but scclAllGather on rank(s) 1"}},
      {"all-gather sendcount 4 vs 8",
       2,
       [](int r, C c) { return allGatherOf(c, r == 0 ? 4 : 8, scclFloat32); },
       {"scclAllGather", "count is 4 on rank(s) 0 but 8 on rank(s) 1"}},
      {"all-gather float32 vs float64",
       2,
       [](int r, C c) { return allGatherOf(c, 4, r == 0 ? scclFloat32 : scclFloat64); },
       {"dtype is float32 on rank(s) 0 but float64 on rank(s) 1"}},
      {"broadcast root 0 vs 1",
       2,
       [](int r, C c) { return broadcastOf(c, 4, r == 0 ? 0 : 1); },
       {"scclBroadcast", "root is 0 on rank(s) 0 but 1 on rank(s) 1"}},
      {"broadcast roots 0, 0, 2",
       3,
       [](int r, C c) { return broadcastOf(c, 4, r == 2 ? 2 : 0); },
       {"root is 0 on rank(s) 0, 1", "but 2 on rank(s) 2"}},
      {"broadcast count 4 vs 2",
       2,
       [](int r, C c) { return broadcastOf(c, r == 0 ? 4 : 2, 0); },
       {"count is 4 on rank(s) 0 but 2 on rank(s) 1"}},
  };
}

// After a refused call the communicator works: an all-reduce of rank + 1 sums to n(n+1)/2.
// Returns an empty string, or what went wrong.
inline std::string checkStillUsable(int rank, scclComm_t comm) {
  const int nranks = commSize(comm);
  std::vector<float> send(5, float(rank + 1)), recv(5, 0.0f);
  const scclResult_t got =
      scclAllReduce(send.data(), recv.data(), 5, scclFloat32, scclSum, comm, nullptr);
  if (got != scclSuccess)
    return std::string("all-reduce after the refused call: ") + scclGetErrorString(got) + ": " +
           scclGetLastError(comm);
  for (float v : recv) {
    if (v != float(nranks * (nranks + 1) / 2))
      return "sum after the refused call is " + std::to_string(v);
  }
  scclResult_t async = scclSuccess;
  scclCommGetAsyncError(comm, &async);
  if (async != scclSuccess) return "the communicator was marked failed";
  return "";
}

// Runs one case on this rank; returns what went wrong ("" when the call was refused as it should
// be, with every mention in the message, and the communicator still worked afterwards).
inline std::string runAgreementCase(const AgreementCase& c, int rank, scclComm_t comm,
                                    std::string* message) {
  const scclResult_t got = c.call(rank, comm);
  *message = scclGetLastError(comm);
  if (got != scclInvalidUsage)
    return std::string(c.name) + ": returned " + scclGetErrorString(got) + ": " + *message;
  for (const std::string& word : c.mentions) {
    if (message->find(word) == std::string::npos)
      return std::string(c.name) + ": '" + word + "' not in: " + *message;
  }
  return checkStillUsable(rank, comm);
}

}  // namespace sccl_test
