// libFuzzer harness: random mismatches between the calls of 2-4 in-process ranks (call agreement,
// comm/call_agreement.h). Each rank makes one collective call that is valid on its own (dense
// all-reduce, all-gather, broadcast, barrier, a sparse all-reduce on one of two sparsifiers,
// an EventGraD step or model average on one of two event communicators), with the operation,
// count, dtype, reduction, root and object drawn from the input. Then:
//  - every rank returns the same code: success where every rank called the same thing, else
//    scclInvalidUsage with the same message on every rank;
//  - the communicators still work: a matched all-reduce gives the right sum on every rank.
// Anything else (a crash, a hang past the 20 s deadline, different codes or messages) aborts.
//
// Input layout: byte 0 the ranks (2 + byte % 3); then 5 bytes per rank: operation, count,
// dtype, reduction or root, object. The communicators, sparsifiers and event communicators are
// created once per rank count and reused (creating them per input would dominate the run).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace {

constexpr size_t kSparseCount = 64;
constexpr size_t kEventCount = 16;
constexpr size_t kMaxCount = 40;

// One rank's call, as drawn (every field normalised so that the call is valid on its own).
struct Call {
  int operation = 0;  // 0 all-reduce, 1 in-place all-reduce, 2 all-gather, 3 broadcast, 4 barrier,
                      // 5 sparse all-reduce, 6 event step, 7 event model average
  size_t count = 0;
  scclDataType_t dtype = scclFloat32;
  scclRedOp_t op = scclSum;
  int root = 0;
  int object = 0;  // 0 or 1: which sparsifier or event communicator

  // What the agreement compares (in-place-ness is not compared: ranks may differ in it).
  bool sameAs(const Call& o) const {
    const int kind = operation == 1 ? 0 : operation, other = o.operation == 1 ? 0 : o.operation;
    return kind == other && count == o.count && dtype == o.dtype && op == o.op && root == o.root &&
           object == o.object;
  }
};

Call drawCall(const uint8_t* b, int nranks) {
  Call c;
  c.operation = b[0] % 8;
  const scclDataType_t types[] = {scclInt8,   scclUint8,   scclInt32,   scclUint32,  scclInt64,
                                  scclUint64, scclFloat16, scclFloat32, scclFloat64, scclBfloat16};
  switch (c.operation) {
    case 0:
    case 1:
      c.count = b[1] % kMaxCount;
      c.dtype = types[b[2] % 10];
      c.op = (b[3] & 1) && (c.dtype == scclFloat16 || c.dtype == scclFloat32 ||
                            c.dtype == scclFloat64 || c.dtype == scclBfloat16)
                 ? scclAvg
                 : scclSum;
      break;
    case 2:
      c.count = b[1] % kMaxCount;
      c.dtype = types[b[2] % 10];
      break;
    case 3:
      c.count = b[1] % kMaxCount;
      c.dtype = types[b[2] % 10];
      c.root = b[3] % nranks;
      break;
    case 5:
      c.op = (b[3] & 1) ? scclAvg : scclSum;
      c.object = b[4] & 1;
      break;
    case 6:
    case 7: c.object = b[4] & 1; break;
    default: break;
  }
  return c;
}

// The communicators of one rank count, with two sparsifiers and two event communicators each.
struct Group {
  int nranks = 0;
  std::vector<scclComm_t> comms;
  std::vector<std::array<scclSparsifier_t, 2>> sparsifiers;
  std::vector<std::array<scclEventComm_t, 2>> events;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fuzz_call_agreement: %s\n", what.c_str());
  std::abort();
}

template <typename Body>
void onRanks(int nranks, Body&& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back([&, r] { body(r); });
  for (std::thread& t : threads) t.join();
}

Group& groupOf(int nranks) {
  static Group groups[5];
  Group& g = groups[nranks];
  if (g.nranks == nranks) return g;
  g.nranks = nranks;
  g.comms.assign(size_t(nranks), nullptr);
  g.sparsifiers.assign(size_t(nranks), {});
  g.events.assign(size_t(nranks), {});
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) die("scclGetUniqueId failed");
  onRanks(nranks, [&](int r) {
    scclConfig_t config = SCCL_CONFIG_INITIALIZER;
    config.timeoutMs = 20000;
    scclComm_t& comm = g.comms[size_t(r)];
    if (scclCommInitRankConfig(&comm, nranks, id, r, &config) != scclSuccess)
      die("scclCommInitRankConfig failed");
    scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
    sparse.algorithm = "topk";
    sparse.density = 0.1;
    const size_t sizes[2] = {6, 10};
    const scclEventConfig_t event = SCCL_EVENT_CONFIG_INITIALIZER;
    for (int k = 0; k < 2; ++k) {
      if (scclSparsifierCreate(&g.sparsifiers[size_t(r)][size_t(k)], comm, kSparseCount,
                               scclFloat32, &sparse) != scclSuccess ||
          scclEventCommCreate(&g.events[size_t(r)][size_t(k)], comm, kEventCount, scclFloat32,
                              sizes, 2, nullptr, 0, nullptr, &event) != scclSuccess)
        die(std::string("creating the objects failed: ") + scclGetLastError(comm));
    }
  });
  return g;
}

scclResult_t runCall(const Group& g, int rank, const Call& c) {
  scclComm_t comm = g.comms[size_t(rank)];
  std::vector<double> send(kMaxCount * size_t(g.nranks) + kSparseCount, 0.5);
  std::vector<double> recv(send.size(), 0.0);
  switch (c.operation) {
    case 0: return scclAllReduce(send.data(), recv.data(), c.count, c.dtype, c.op, comm, nullptr);
    case 1: return scclAllReduce(recv.data(), recv.data(), c.count, c.dtype, c.op, comm, nullptr);
    case 2: return scclAllGather(send.data(), recv.data(), c.count, c.dtype, comm, nullptr);
    case 3: return scclBroadcast(send.data(), recv.data(), c.count, c.dtype, c.root, comm, nullptr);
    case 4: return scclBarrier(comm);
    case 5: {
      std::vector<float> grad(kSparseCount), out(kSparseCount);
      for (size_t i = 0; i < kSparseCount; ++i) grad[i] = float((i * 7 + size_t(rank)) % 13) - 6;
      return scclSparseAllreduce(grad.data(), out.data(), kSparseCount, scclFloat32, c.op,
                                 g.sparsifiers[size_t(rank)][size_t(c.object)], comm, nullptr);
    }
    case 6: {
      std::vector<float> params(kEventCount, float(rank));
      return scclEventCommStep(g.events[size_t(rank)][size_t(c.object)], params.data(), kEventCount,
                               scclFloat32, nullptr);
    }
    default: {
      std::vector<float> params(kEventCount, float(rank)), out(kEventCount);
      return scclEventCommAverageModel(g.events[size_t(rank)][size_t(c.object)], params.data(),
                                       out.data(), kEventCount, scclFloat32, nullptr);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int nranks = 2 + data[0] % 3;
  if (size < 1 + size_t(nranks) * 5) return 0;
  std::vector<Call> calls;
  for (int r = 0; r < nranks; ++r) calls.push_back(drawCall(data + 1 + r * 5, nranks));
  bool matched = true;
  for (int r = 1; r < nranks; ++r) matched &= calls[size_t(r)].sameAs(calls[0]);

  Group& g = groupOf(nranks);
  std::vector<scclResult_t> results(static_cast<size_t>(nranks));
  std::vector<std::string> messages(static_cast<size_t>(nranks));
  std::vector<std::string> after(static_cast<size_t>(nranks));
  onRanks(nranks, [&](int r) {
    results[size_t(r)] = runCall(g, r, calls[size_t(r)]);
    messages[size_t(r)] = scclGetLastError(g.comms[size_t(r)]);
    float mine = float(r + 1), sum = 0;
    if (scclAllReduce(&mine, &sum, 1, scclFloat32, scclSum, g.comms[size_t(r)], nullptr) !=
            scclSuccess ||
        sum != float(nranks * (nranks + 1) / 2))
      after[size_t(r)] = std::string("the matched all-reduce afterwards failed: ") +
                         scclGetLastError(g.comms[size_t(r)]);
  });
  const scclResult_t want = matched ? scclSuccess : scclInvalidUsage;
  for (int r = 0; r < nranks; ++r) {
    if (results[size_t(r)] != want)
      die("rank " + std::to_string(r) + " returned " + scclGetErrorString(results[size_t(r)]) +
          " where every rank should return " + scclGetErrorString(want) + ": " +
          messages[size_t(r)]);
    if (!matched && messages[size_t(r)] != messages[0])
      die("rank " + std::to_string(r) + "'s message differs: " + messages[size_t(r)] + " | " +
          messages[0]);
    if (!after[size_t(r)].empty()) die("rank " + std::to_string(r) + ": " + after[size_t(r)]);
  }
  return 0;
}
