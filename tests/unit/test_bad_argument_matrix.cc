// The bad-argument matrix (issue 4, item 1): for every function the public header exports, a
// table of invalid calls, each with the code docs/api.md documents for it. Every case runs on
// both ranks of a 2-rank in-process communicator (an argument rejected on every rank returns at
// once, so no rank waits for a peer), must return its documented code with a non-empty
// scclGetLastError message, and after each function's cases a valid scclAllReduce on the same
// communicator must still give the right sum. A coverage test parses the public header and
// requires every exported function in the table with at least 20 cases (the few exemptions are
// listed with their reason).
#include <catch2/catch.hpp>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "support/local_ranks.h"

namespace {

constexpr int kRanks = 2;
constexpr size_t kCount = 64;  // elements of every valid buffer, sparsifier and event comm
constexpr size_t kMax = std::numeric_limits<size_t>::max();
constexpr size_t k2p31 = size_t{1} << 31;
constexpr size_t k2p32 = size_t{1} << 32;

// Everything one rank's cases use: live handles, destroyed ones, buffers, foreign objects.
struct Ctx {
  int rank = 0;
  scclComm_t comm = nullptr;   // the communicator every case and the check collective use
  scclComm_t other = nullptr;  // a second live communicator
  scclComm_t deadComm = nullptr;
  scclComm_t abortedComm = nullptr;
  scclSparsifier_t sp = nullptr;
  scclSparsifier_t spOther = nullptr;  // created on `other`
  scclSparsifier_t deadSp = nullptr;
  scclEventComm_t ec = nullptr;
  scclEventComm_t deadEc = nullptr;
  scclUniqueId id{};  // a fresh id nobody joins: creation cases must fail before the rendezvous
  std::vector<float> send = std::vector<float>(kCount, 1.0f);
  std::vector<float> recv = std::vector<float>(kCount, 0.0f);
  std::vector<double> table = std::vector<double>(3 * kCount, 0.0);
  std::vector<uint8_t> bitmap = std::vector<uint8_t>(kCount, 1);
  std::vector<int64_t> idx = std::vector<int64_t>(kCount, 0);
  std::vector<uint64_t> counts = std::vector<uint64_t>(kRanks + 8, 0);
  std::vector<double> thresholds = std::vector<double>(8, 0.0);
  size_t tensorSizes[2] = {kCount / 2, kCount / 2};
  size_t nselected = 0;
  int stackInt = 0;
  alignas(16) unsigned char zeros[256] = {};
  alignas(16) unsigned char forged[256] = {};  // the first bytes of a live handle, copied
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  scclSparseConfig_t sparseConfig = SCCL_SPARSE_CONFIG_INITIALIZER;
  scclEventConfig_t eventConfig = SCCL_EVENT_CONFIG_INITIALIZER;
  scclSparseStats_t sparseStats{};
  scclEventStats_t eventStats{};
  float* freedHeap = nullptr;  // an address that was a heap block (never dereferenced)
};

using Call = std::function<scclResult_t(Ctx&)>;
struct Case {
  std::string fn;
  std::string name;
  scclResult_t want;
  Call call;
};

template <typename Enum>
Enum badEnum(int bits) {
  static_assert(sizeof(Enum) == sizeof(int), "ABI enums are int-sized");
  Enum value;
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

const int kBadDtypes[] = {-1, 10, 11, 255, INT_MAX, INT_MIN};
const int kBadOps[] = {-1, 2, 3, INT_MAX, INT_MIN};

enum class Kind { Comm, Sparsifier, Event };

void* liveOf(Ctx& c, Kind k) {
  switch (k) {
    case Kind::Comm: return c.comm;
    case Kind::Sparsifier: return c.sp;
    case Kind::Event: return c.ec;
  }
  return nullptr;
}

// Twenty pointers that are not a live handle of kind k: NULL, destroyed, live handles of the
// other kinds (caught by the handle magic), and addresses that are no handle at all.
std::vector<std::pair<std::string, std::function<void*(Ctx&)>>> badHandles(Kind k) {
  std::vector<std::pair<std::string, std::function<void*(Ctx&)>>> v;
  v.emplace_back("NULL", [](Ctx&) -> void* { return nullptr; });
  if (k == Kind::Comm) {
    v.emplace_back("destroyed communicator", [](Ctx& c) -> void* { return c.deadComm; });
    v.emplace_back("aborted communicator", [](Ctx& c) -> void* { return c.abortedComm; });
    v.emplace_back("destroyed sparsifier", [](Ctx& c) -> void* { return c.deadSp; });
  } else if (k == Kind::Sparsifier) {
    v.emplace_back("destroyed sparsifier", [](Ctx& c) -> void* { return c.deadSp; });
    v.emplace_back("destroyed communicator", [](Ctx& c) -> void* { return c.deadComm; });
  } else {
    v.emplace_back("destroyed event communicator", [](Ctx& c) -> void* { return c.deadEc; });
    v.emplace_back("destroyed communicator", [](Ctx& c) -> void* { return c.deadComm; });
  }
  if (k != Kind::Comm) v.emplace_back("live communicator", [](Ctx& c) -> void* { return c.comm; });
  if (k != Kind::Sparsifier)
    v.emplace_back("live sparsifier", [](Ctx& c) -> void* { return c.sp; });
  if (k != Kind::Event)
    v.emplace_back("live event communicator", [](Ctx& c) -> void* { return c.ec; });
  if (k != Kind::Comm)
    v.emplace_back("aborted communicator", [](Ctx& c) -> void* { return c.abortedComm; });
  v.emplace_back("stack int", [](Ctx& c) -> void* { return &c.stackInt; });
  v.emplace_back("zeroed block", [](Ctx& c) -> void* { return c.zeros; });
  v.emplace_back("forged copy with the right magic", [k](Ctx& c) -> void* {
    std::memcpy(c.forged, liveOf(c, k), 8);  // the magic is the handle's first field
    return c.forged;
  });
  v.emplace_back("live handle + 1",
                 [k](Ctx& c) -> void* { return static_cast<char*>(liveOf(c, k)) + 1; });
  v.emplace_back("live handle + 8",
                 [k](Ctx& c) -> void* { return static_cast<char*>(liveOf(c, k)) + 8; });
  v.emplace_back("address 1", [](Ctx&) -> void* { return reinterpret_cast<void*>(uintptr_t{1}); });
  v.emplace_back("address 0xdeadbeef",
                 [](Ctx&) -> void* { return reinterpret_cast<void*>(uintptr_t{0xdeadbeef}); });
  v.emplace_back("address UINTPTR_MAX - 7",
                 [](Ctx&) -> void* { return reinterpret_cast<void*>(UINTPTR_MAX - 7); });
  v.emplace_back("string literal", [](Ctx&) -> void* {
    return const_cast<char*>("not a handle, not a handle, not a handle");
  });
  v.emplace_back("unique id", [](Ctx& c) -> void* { return &c.id; });
  v.emplace_back("config struct", [](Ctx& c) -> void* { return &c.config; });
  v.emplace_back("address of the handle variable", [k](Ctx& c) -> void* {
    switch (k) {
      case Kind::Comm: return &c.comm;
      case Kind::Sparsifier: return &c.sp;
      case Kind::Event: return &c.ec;
    }
    return nullptr;
  });
  v.emplace_back("freed heap block", [](Ctx& c) -> void* { return c.freedHeap; });
  v.emplace_back("buffer", [](Ctx& c) -> void* { return c.send.data(); });
  return v;
}

scclComm_t asComm(void* p) {
  return static_cast<scclComm_t>(p);
}
scclSparsifier_t asSp(void* p) {
  return static_cast<scclSparsifier_t>(p);
}
scclEventComm_t asEc(void* p) {
  return static_cast<scclEventComm_t>(p);
}
void* streamOne() {
  return reinterpret_cast<void*>(uintptr_t{1});
}

struct Matrix {
  std::vector<Case> cases;
  void add(const std::string& fn, const std::string& name, scclResult_t want, Call call) {
    cases.push_back(Case{fn, name, want, std::move(call)});
  }
  // One case per bad handle in the slot `k` of fn: make(ctx, handle) makes the call.
  void handles(const std::string& fn, Kind k, std::function<scclResult_t(Ctx&, void*)> make) {
    for (auto& [name, get] : badHandles(k)) {
      auto g = get;
      add(fn, "handle: " + name, scclInvalidArgument, [g, make](Ctx& c) { return make(c, g(c)); });
    }
  }
  void dtypes(const std::string& fn, std::function<scclResult_t(Ctx&, scclDataType_t)> make) {
    for (int bits : kBadDtypes)
      add(fn, "dtype " + std::to_string(bits), scclInvalidArgument,
          [bits, make](Ctx& c) { return make(c, badEnum<scclDataType_t>(bits)); });
  }
};

void addCommunicatorCases(Matrix& m) {
  // scclGetUniqueId: a single output pointer, NULL its only invalid value (exempt).
  m.add("scclGetUniqueId", "NULL id", scclInvalidArgument,
        [](Ctx&) { return scclGetUniqueId(nullptr); });

  // scclCommInitRank: checked before the rendezvous, so nobody waits.
  struct RankArgs {
    const char* name;
    bool nullOut;
    int nranks, rank;
  };
  const RankArgs rankArgs[] = {
      {"NULL comm", true, 2, 0},
      {"NULL comm and nranks 0", true, 0, 0},
      {"NULL comm and rank -1", true, 2, -1},
      {"nranks 0", false, 0, 0},
      {"nranks -1", false, -1, 0},
      {"nranks -5", false, -5, 0},
      {"nranks INT_MIN", false, INT_MIN, 0},
      {"nranks INT_MIN rank INT_MIN", false, INT_MIN, INT_MIN},
      {"rank -1", false, 2, -1},
      {"rank -2", false, 2, -2},
      {"rank INT_MIN", false, 2, INT_MIN},
      {"rank == nranks", false, 2, 2},
      {"rank nranks + 1", false, 2, 3},
      {"rank INT_MAX", false, 2, INT_MAX},
      {"nranks 1 rank 1", false, 1, 1},
      {"nranks 1 rank -1", false, 1, -1},
      {"nranks 3 rank 3", false, 3, 3},
      {"nranks 0 rank -1", false, 0, -1},
      {"rank == nranks == INT_MAX", false, INT_MAX, INT_MAX},
      {"nranks -1 rank -1", false, -1, -1},
  };
  for (const char* fn : {"scclCommInitRank", "scclCommInitRankConfig"}) {
    bool withConfig = std::string(fn) == "scclCommInitRankConfig";
    for (const RankArgs& a : rankArgs) {
      m.add(fn, a.name, scclInvalidArgument, [a, withConfig](Ctx& c) {
        scclComm_t out = nullptr;
        scclComm_t* o = a.nullOut ? nullptr : &out;
        return withConfig ? scclCommInitRankConfig(o, a.nranks, c.id, a.rank, &c.config)
                          : scclCommInitRank(o, a.nranks, c.id, a.rank);
      });
    }
  }
  // scclCommInitRankConfig: the config (valid nranks and rank, so only the config is wrong).
  struct BigConfig {
    scclConfig_t config;
    unsigned char tail[64];
  };
  auto withConfig = [&m](const std::string& name, scclResult_t want,
                         std::function<void(scclConfig_t&)> edit) {
    m.add("scclCommInitRankConfig", name, want, [edit](Ctx& c) {
      BigConfig big{};
      big.config = SCCL_CONFIG_INITIALIZER;
      edit(big.config);
      scclComm_t out = nullptr;
      return scclCommInitRankConfig(&out, kRanks, c.id, c.rank, &big.config);
    });
  };
  m.add("scclCommInitRankConfig", "NULL config", scclInvalidArgument, [](Ctx& c) {
    scclComm_t out = nullptr;
    return scclCommInitRankConfig(&out, kRanks, c.id, c.rank, nullptr);
  });
  withConfig("magic 0", scclInvalidArgument, [](scclConfig_t& x) { x.magic = 0; });
  withConfig("magic of the sparse config", scclInvalidArgument,
             [](scclConfig_t& x) { x.magic = SCCL_SPARSE_CONFIG_MAGIC; });
  withConfig("magic + 1", scclInvalidArgument, [](scclConfig_t& x) { x.magic += 1; });
  withConfig("size 0", scclInvalidArgument, [](scclConfig_t& x) { x.size = 0; });
  withConfig("size 8", scclInvalidArgument, [](scclConfig_t& x) { x.size = 8; });
  withConfig("size short of commName", scclInvalidArgument,
             [](scclConfig_t& x) { x.size = offsetof(scclConfig_t, commName); });
  withConfig("newer version and larger size", scclInvalidArgument, [](scclConfig_t& x) {
    x.version = SCCL_VERSION_CODE + 1;
    x.size = sizeof(scclConfig_t) + 8;
  });
  withConfig("unknown transport", scclInvalidArgument,
             [](scclConfig_t& x) { x.transport = "carrier-pigeon"; });
  withConfig("empty transport", scclInvalidArgument, [](scclConfig_t& x) { x.transport = ""; });
  withConfig("transport not built in (ucx)", scclInvalidUsage,
             [](scclConfig_t& x) { x.transport = "ucx"; });
  withConfig("timeout 0", scclInvalidArgument, [](scclConfig_t& x) { x.timeoutMs = 0; });
  withConfig("timeout -1", scclInvalidArgument, [](scclConfig_t& x) { x.timeoutMs = -1; });
  withConfig("timeout INT_MIN + 1", scclInvalidArgument,
             [](scclConfig_t& x) { x.timeoutMs = INT_MIN + 1; });

  // scclCommInitMpi: this binary never initialises MPI. A NULL output is scclInvalidArgument
  // before anything else; with a valid output every call is scclInvalidUsage (MPI not
  // initialised, or a build without MPI), whatever else is wrong.
  auto mpiCase = [&m](const std::string& name, bool nullOut, scclResult_t want,
                      std::function<void(scclConfig_t&)> edit) {
    m.add("scclCommInitMpi", name, want, [nullOut, edit](Ctx&) {
      scclConfig_t config = SCCL_CONFIG_INITIALIZER;
      if (edit) edit(config);
      scclComm_t out = nullptr;
      return scclCommInitMpi(nullOut ? nullptr : &out, nullptr, &config);
    });
  };
  std::vector<std::pair<std::string, std::function<void(scclConfig_t&)>>> configEdits = {
      {"valid config", nullptr},
      {"magic 0", [](scclConfig_t& x) { x.magic = 0; }},
      {"size 0", [](scclConfig_t& x) { x.size = 0; }},
      {"size 8", [](scclConfig_t& x) { x.size = 8; }},
      {"unknown transport", [](scclConfig_t& x) { x.transport = "carrier-pigeon"; }},
      {"timeout 0", [](scclConfig_t& x) { x.timeoutMs = 0; }},
      {"timeout -1", [](scclConfig_t& x) { x.timeoutMs = -1; }},
      {"transport local", [](scclConfig_t& x) { x.transport = "local"; }},
      {"magic + 1", [](scclConfig_t& x) { x.magic += 1; }},
      {"timeout INT_MIN + 1", [](scclConfig_t& x) { x.timeoutMs = INT_MIN + 1; }},
  };
  for (auto& [name, edit] : configEdits) {
    mpiCase("NULL comm, " + name, true, scclInvalidArgument, edit);
    mpiCase("MPI not initialised, " + name, false, scclInvalidUsage, edit);
  }
  m.add("scclCommInitMpi", "NULL comm, NULL config", scclInvalidArgument,
        [](Ctx&) { return scclCommInitMpi(nullptr, nullptr, nullptr); });

  m.handles("scclCommDestroy", Kind::Comm,
            [](Ctx&, void* h) { return scclCommDestroy(asComm(h)); });
  m.handles("scclCommAbort", Kind::Comm, [](Ctx&, void* h) { return scclCommAbort(asComm(h)); });
  m.handles("scclCommGetAsyncError", Kind::Comm, [](Ctx&, void* h) {
    scclResult_t e;
    return scclCommGetAsyncError(asComm(h), &e);
  });
  m.add("scclCommGetAsyncError", "NULL asyncError", scclInvalidArgument,
        [](Ctx& c) { return scclCommGetAsyncError(c.comm, nullptr); });
  m.handles("scclCommCount", Kind::Comm, [](Ctx&, void* h) {
    int n;
    return scclCommCount(asComm(h), &n);
  });
  m.add("scclCommCount", "NULL count", scclInvalidArgument,
        [](Ctx& c) { return scclCommCount(c.comm, nullptr); });
  m.handles("scclCommUserRank", Kind::Comm, [](Ctx&, void* h) {
    int r;
    return scclCommUserRank(asComm(h), &r);
  });
  m.add("scclCommUserRank", "NULL rank", scclInvalidArgument,
        [](Ctx& c) { return scclCommUserRank(c.comm, nullptr); });
  m.handles("scclCommTransportName", Kind::Comm, [](Ctx&, void* h) {
    const char* n;
    return scclCommTransportName(asComm(h), &n);
  });
  m.add("scclCommTransportName", "NULL name", scclInvalidArgument,
        [](Ctx& c) { return scclCommTransportName(c.comm, nullptr); });

  // The three calls that cannot fail: documented to return a string (never NULL) or the version.
  // A case "succeeds" (scclSuccess) when the documented behaviour holds.
  m.add("scclGetVersion", "NULL version", scclInvalidArgument,
        [](Ctx&) { return scclGetVersion(nullptr); });
  for (int bits : {-1, 9, 10, 100, INT_MAX, INT_MIN}) {
    m.add("scclGetErrorString", "result " + std::to_string(bits) + " gives a string", scclSuccess,
          [bits](Ctx&) {
            const char* s = scclGetErrorString(badEnum<scclResult_t>(bits));
            return s != nullptr ? scclSuccess : scclInternalError;
          });
  }
  for (auto& [name, get] : badHandles(Kind::Comm)) {
    auto g = get;
    m.add("scclGetLastError", "handle: " + name + " gives a string", scclSuccess, [g](Ctx& c) {
      const char* s = scclGetLastError(asComm(g(c)));
      return s != nullptr ? scclSuccess : scclInternalError;
    });
  }
}

// count x element size overflowing size_t, per dtype, and the 2^31 / 2^32 boundaries (with a NULL
// buffer: the library cannot know a buffer's length, so a huge count alone over a real buffer is
// not detectable).
struct CountArg {
  const char* name;
  size_t count;
  scclDataType_t dtype;
  bool nullBuffer;
};
const CountArg kOverflowCounts[] = {
    {"count SIZE_MAX float32", kMax, scclFloat32, false},
    {"count SIZE_MAX / 4 + 1 float32", kMax / 4 + 1, scclFloat32, false},
    {"count 2^62 float32", size_t{1} << 62, scclFloat32, false},
    {"count SIZE_MAX / 8 + 1 float64", kMax / 8 + 1, scclFloat64, false},
    {"count SIZE_MAX / 2 + 1 float16", kMax / 2 + 1, scclFloat16, false},
    {"count 2^31 with NULL buffers", k2p31, scclFloat32, true},
    {"count 2^32 with NULL buffers", k2p32, scclFloat32, true},
};

void addCollectiveCases(Matrix& m) {
  // scclAllReduce
  const std::string ar = "scclAllReduce";
  m.handles(ar, Kind::Comm, [](Ctx& c, void* h) {
    return scclAllReduce(c.send.data(), c.recv.data(), kCount, scclFloat32, scclSum, asComm(h),
                         nullptr);
  });
  m.add(ar, "NULL sendbuf", scclInvalidArgument, [](Ctx& c) {
    return scclAllReduce(nullptr, c.recv.data(), kCount, scclFloat32, scclSum, c.comm, nullptr);
  });
  m.add(ar, "NULL recvbuf", scclInvalidArgument, [](Ctx& c) {
    return scclAllReduce(c.send.data(), nullptr, kCount, scclFloat32, scclSum, c.comm, nullptr);
  });
  m.dtypes(ar, [](Ctx& c, scclDataType_t d) {
    return scclAllReduce(c.send.data(), c.recv.data(), kCount, d, scclSum, c.comm, nullptr);
  });
  for (int bits : kBadOps)
    m.add(ar, "op " + std::to_string(bits), scclInvalidArgument, [bits](Ctx& c) {
      return scclAllReduce(c.send.data(), c.recv.data(), kCount, scclFloat32,
                           badEnum<scclRedOp_t>(bits), c.comm, nullptr);
    });
  m.add(ar, "scclAvg on int32", scclInvalidArgument, [](Ctx& c) {
    return scclAllReduce(c.send.data(), c.recv.data(), kCount, scclInt32, scclAvg, c.comm, nullptr);
  });
  for (const CountArg& a : kOverflowCounts)
    m.add(ar, a.name, scclInvalidArgument, [a](Ctx& c) {
      return scclAllReduce(a.nullBuffer ? nullptr : c.send.data(),
                           a.nullBuffer ? nullptr : c.recv.data(), a.count, a.dtype, scclSum,
                           c.comm, nullptr);
    });
  m.add(ar, "stream with host memory", scclInvalidArgument, [](Ctx& c) {
    return scclAllReduce(c.send.data(), c.recv.data(), kCount, scclFloat32, scclSum, c.comm,
                         streamOne());
  });

  // scclAllGather (recv holds kRanks * 8 floats for sendcount 8)
  const std::string ag = "scclAllGather";
  m.handles(ag, Kind::Comm, [](Ctx& c, void* h) {
    return scclAllGather(c.send.data(), c.recv.data(), 8, scclFloat32, asComm(h), nullptr);
  });
  m.add(ag, "NULL sendbuf", scclInvalidArgument, [](Ctx& c) {
    return scclAllGather(nullptr, c.recv.data(), 8, scclFloat32, c.comm, nullptr);
  });
  m.add(ag, "NULL recvbuf", scclInvalidArgument, [](Ctx& c) {
    return scclAllGather(c.send.data(), nullptr, 8, scclFloat32, c.comm, nullptr);
  });
  m.dtypes(ag, [](Ctx& c, scclDataType_t d) {
    return scclAllGather(c.send.data(), c.recv.data(), 8, d, c.comm, nullptr);
  });
  for (const CountArg& a : kOverflowCounts)
    m.add(ag, a.name, scclInvalidArgument, [a](Ctx& c) {
      return scclAllGather(a.nullBuffer ? nullptr : c.send.data(),
                           a.nullBuffer ? nullptr : c.recv.data(), a.count, a.dtype, c.comm,
                           nullptr);
    });
  m.add(ag, "sendcount x nranks overflows (2^61 float32)", scclInvalidArgument, [](Ctx& c) {
    return scclAllGather(c.send.data(), c.recv.data(), size_t{1} << 61, scclFloat32, c.comm,
                         nullptr);
  });
  m.add(ag, "stream with host memory", scclInvalidArgument, [](Ctx& c) {
    return scclAllGather(c.send.data(), c.recv.data(), 8, scclFloat32, c.comm, streamOne());
  });

  // scclBroadcast
  const std::string bc = "scclBroadcast";
  m.handles(bc, Kind::Comm, [](Ctx& c, void* h) {
    return scclBroadcast(c.send.data(), c.recv.data(), kCount, scclFloat32, 0, asComm(h), nullptr);
  });
  m.add(bc, "NULL recvbuf", scclInvalidArgument, [](Ctx& c) {
    return scclBroadcast(c.send.data(), nullptr, kCount, scclFloat32, 0, c.comm, nullptr);
  });
  // sendbuf is read on the root only: the other rank passes a NULL recvbuf so it is rejected too.
  m.add(bc, "NULL sendbuf on the root", scclInvalidArgument, [](Ctx& c) {
    return scclBroadcast(nullptr, c.rank == 0 ? c.recv.data() : nullptr, kCount, scclFloat32, 0,
                         c.comm, nullptr);
  });
  for (int root : {-1, kRanks, kRanks + 1, 100, INT_MAX, INT_MIN})
    m.add(bc, "root " + std::to_string(root), scclInvalidArgument, [root](Ctx& c) {
      return scclBroadcast(c.send.data(), c.recv.data(), kCount, scclFloat32, root, c.comm,
                           nullptr);
    });
  m.dtypes(bc, [](Ctx& c, scclDataType_t d) {
    return scclBroadcast(c.send.data(), c.recv.data(), kCount, d, 0, c.comm, nullptr);
  });
  for (const CountArg& a : kOverflowCounts)
    m.add(bc, a.name, scclInvalidArgument, [a](Ctx& c) {
      return scclBroadcast(a.nullBuffer ? nullptr : c.send.data(),
                           a.nullBuffer ? nullptr : c.recv.data(), a.count, a.dtype, 0, c.comm,
                           nullptr);
    });
  m.add(bc, "stream with host memory", scclInvalidArgument, [](Ctx& c) {
    return scclBroadcast(c.send.data(), c.recv.data(), kCount, scclFloat32, 0, c.comm, streamOne());
  });

  m.handles("scclBarrier", Kind::Comm, [](Ctx&, void* h) { return scclBarrier(asComm(h)); });
}

void addSelectCases(Matrix& m) {
  const std::string fn = "scclPartitionedSelect";
  struct Args {
    const void* buf;
    size_t count;
    scclDataType_t dtype;
    size_t begin, end;
    double threshold;
    int64_t* idx;
    void* val;
    size_t capacity;
    size_t* nselected;
    void* stream;
  };
  auto sel = [&m, &fn](const std::string& name, std::function<void(Ctx&, Args&)> edit) {
    m.add(fn, name, scclInvalidArgument, [edit](Ctx& c) {
      Args a{c.send.data(), kCount, scclFloat32,  0,      kCount, 0.5, c.idx.data(),
             c.recv.data(), kCount, &c.nselected, nullptr};
      edit(c, a);
      return scclPartitionedSelect(a.buf, a.count, a.dtype, a.begin, a.end, a.threshold, a.idx,
                                   a.val, a.capacity, a.nselected, a.stream);
    });
  };
  sel("NULL buf", [](Ctx&, Args& a) { a.buf = nullptr; });
  sel("NULL idxOut", [](Ctx&, Args& a) { a.idx = nullptr; });
  sel("NULL nselected", [](Ctx&, Args& a) { a.nselected = nullptr; });
  sel("begin > end", [](Ctx&, Args& a) { a.begin = 10, a.end = 9; });
  sel("end > count", [](Ctx&, Args& a) { a.end = kCount + 1; });
  sel("end SIZE_MAX", [](Ctx&, Args& a) { a.end = kMax; });
  sel("begin SIZE_MAX end 0", [](Ctx&, Args& a) { a.begin = kMax, a.end = 0; });
  sel("capacity 0", [](Ctx&, Args& a) { a.capacity = 0; });
  sel("capacity SIZE_MAX (x 8 overflows)", [](Ctx&, Args& a) { a.capacity = kMax; });
  sel("capacity 2^61 (x 8 overflows)", [](Ctx&, Args& a) { a.capacity = size_t{1} << 61; });
  sel("threshold NaN", [](Ctx&, Args& a) { a.threshold = std::nan(""); });
  sel("threshold -1", [](Ctx&, Args& a) { a.threshold = -1; });
  sel("threshold -inf", [](Ctx&, Args& a) { a.threshold = -INFINITY; });
  sel("threshold -0.0001", [](Ctx&, Args& a) { a.threshold = -1e-4; });
  for (int bits : kBadDtypes)
    sel("dtype " + std::to_string(bits),
        [bits](Ctx&, Args& a) { a.dtype = badEnum<scclDataType_t>(bits); });
  sel("dtype int32", [](Ctx&, Args& a) { a.dtype = scclInt32; });
  sel("dtype int8", [](Ctx&, Args& a) { a.dtype = scclInt8; });
  sel("dtype uint64", [](Ctx&, Args& a) { a.dtype = scclUint64; });
  for (const CountArg& ca : kOverflowCounts) {
    if (ca.nullBuffer) continue;
    sel(ca.name, [ca](Ctx&, Args& a) { a.count = ca.count, a.dtype = ca.dtype, a.end = 1; });
  }
  sel("count 2^31 NULL buf", [](Ctx&, Args& a) { a.buf = nullptr, a.count = k2p31; });
  sel("count 2^32 NULL buf", [](Ctx&, Args& a) { a.buf = nullptr, a.count = k2p32; });
  sel("stream with host memory", [](Ctx&, Args& a) { a.stream = streamOne(); });
}

void addSparseCases(Matrix& m) {
  const std::string js = "scclSparseConfigFromJson";
  m.add(js, "NULL json", scclInvalidArgument,
        [](Ctx& c) { return scclSparseConfigFromJson(nullptr, &c.sparseConfig); });
  m.add(js, "NULL config", scclInvalidArgument,
        [](Ctx&) { return scclSparseConfigFromJson("{}", nullptr); });
  for (const char* text : {"",
                           "not json",
                           "{",
                           "[]",
                           "42",
                           "\"density\"",
                           "{} x",
                           "{\"density\": 0}",
                           "{\"density\": -1}",
                           "{\"density\": 2}",
                           "{\"density\": \"x\"}",
                           "{\"no_such_key\": 1}",
                           "{\"algorithm\": \"nope\"}",
                           "{\"algorithm\": 3}",
                           "{\"estimator\": \"nope\"}",
                           "{\"search\": \"nope\"}",
                           "{\"reduction\": \"nope\"}",
                           "{\"non_finite\": \"maybe\"}",
                           "{\"sketch_rows\": 0}",
                           "{\"sketch_rows\": 17}",
                           "{\"sketch_lambda\": 0}",
                           "{\"correction_bins_per_octave\": 3}",
                           "{\"correction_octaves\": 0}",
                           "{\"sidco_first_ratio\": 1}",
                           "{\"dgc_sample_ratio\": 0}"}) {
    std::string t = text;
    m.add(js, "json " + t, scclInvalidArgument, [t](Ctx&) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      return scclSparseConfigFromJson(t.c_str(), &config);
    });
  }

  const std::string cr = "scclSparsifierCreate";
  m.add(cr, "NULL sparsifier", scclInvalidArgument, [](Ctx& c) {
    return scclSparsifierCreate(nullptr, c.comm, kCount, scclFloat32, &c.sparseConfig);
  });
  m.handles(cr, Kind::Comm, [](Ctx& c, void* h) {
    scclSparsifier_t out;
    return scclSparsifierCreate(&out, asComm(h), kCount, scclFloat32, &c.sparseConfig);
  });
  m.dtypes(cr, [](Ctx& c, scclDataType_t d) {
    scclSparsifier_t out;
    return scclSparsifierCreate(&out, c.comm, kCount, d, &c.sparseConfig);
  });
  for (scclDataType_t d : {scclInt32, scclInt8, scclUint64})
    m.add(cr, "dtype " + std::to_string(int(d)), scclInvalidArgument, [d](Ctx& c) {
      scclSparsifier_t out;
      return scclSparsifierCreate(&out, c.comm, kCount, d, &c.sparseConfig);
    });
  for (size_t count : {kMax, (size_t{1} << 62) + 1, kMax / 8 + 1})
    m.add(cr, "count " + std::to_string(count), scclInvalidArgument, [count](Ctx& c) {
      scclSparsifier_t out;
      return scclSparsifierCreate(&out, c.comm, count, scclFloat32, &c.sparseConfig);
    });
  m.add(cr, "NULL config", scclInvalidArgument, [](Ctx& c) {
    scclSparsifier_t out;
    return scclSparsifierCreate(&out, c.comm, kCount, scclFloat32, nullptr);
  });
  auto crConfig = [&m, &cr](const std::string& name, std::function<void(scclSparseConfig_t&)> e) {
    m.add(cr, name, scclInvalidArgument, [e](Ctx& c) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      e(config);
      scclSparsifier_t out;
      return scclSparsifierCreate(&out, c.comm, kCount, scclFloat32, &config);
    });
  };
  crConfig("config magic 0", [](scclSparseConfig_t& x) { x.magic = 0; });
  crConfig("config magic of scclConfig_t",
           [](scclSparseConfig_t& x) { x.magic = SCCL_CONFIG_MAGIC; });
  crConfig("config size 0", [](scclSparseConfig_t& x) { x.size = 0; });
  crConfig("config density 0", [](scclSparseConfig_t& x) { x.density = 0; });
  crConfig("config density NaN", [](scclSparseConfig_t& x) { x.density = std::nan(""); });
  crConfig("config algorithm nope", [](scclSparseConfig_t& x) { x.algorithm = "nope"; });
  crConfig("config algorithm NULL", [](scclSparseConfig_t& x) { x.algorithm = nullptr; });
  crConfig("config nonFinite 7",
           [](scclSparseConfig_t& x) { x.nonFinite = badEnum<scclNonFinitePolicy_t>(7); });

  const std::string sa = "scclSparseAllreduce";
  m.handles(sa, Kind::Comm, [](Ctx& c, void* h) {
    return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat32, scclSum, c.sp,
                               asComm(h), nullptr);
  });
  m.handles(sa, Kind::Sparsifier, [](Ctx& c, void* h) {
    return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat32, scclSum, asSp(h),
                               c.comm, nullptr);
  });
  m.add(sa, "sparsifier of another communicator", scclInvalidArgument, [](Ctx& c) {
    return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat32, scclSum,
                               c.spOther, c.comm, nullptr);
  });
  for (size_t count :
       {size_t{0}, kCount - 1, kCount + 1, k2p31, k2p32, k2p32 + kCount, kMax, kMax / 4 + 1})
    m.add(sa, "count " + std::to_string(count), scclInvalidArgument, [count](Ctx& c) {
      return scclSparseAllreduce(c.send.data(), c.recv.data(), count, scclFloat32, scclSum, c.sp,
                                 c.comm, nullptr);
    });
  m.dtypes(sa, [](Ctx& c, scclDataType_t d) {
    return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, d, scclSum, c.sp, c.comm,
                               nullptr);
  });
  m.add(sa, "dtype float64 (not the sparsifier's)", scclInvalidArgument, [](Ctx& c) {
    return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat64, scclSum, c.sp,
                               c.comm, nullptr);
  });
  for (int bits : kBadOps)
    m.add(sa, "op " + std::to_string(bits), scclInvalidArgument, [bits](Ctx& c) {
      return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat32,
                                 badEnum<scclRedOp_t>(bits), c.sp, c.comm, nullptr);
    });
  m.add(sa, "NULL sendbuf", scclInvalidArgument, [](Ctx& c) {
    return scclSparseAllreduce(nullptr, c.recv.data(), kCount, scclFloat32, scclSum, c.sp, c.comm,
                               nullptr);
  });
  m.add(sa, "NULL recvbuf", scclInvalidArgument, [](Ctx& c) {
    return scclSparseAllreduce(c.send.data(), nullptr, kCount, scclFloat32, scclSum, c.sp, c.comm,
                               nullptr);
  });
  m.add(sa, "stream with host memory", scclInvalidArgument, [](Ctx& c) {
    return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat32, scclSum, c.sp,
                               c.comm, streamOne());
  });

  m.handles("scclSparsifierDestroy", Kind::Sparsifier,
            [](Ctx&, void* h) { return scclSparsifierDestroy(asSp(h)); });
  m.handles("scclSparsifierReset", Kind::Sparsifier,
            [](Ctx&, void* h) { return scclSparsifierReset(asSp(h)); });
  const std::string gs = "scclSparsifierGetStats";
  m.handles(gs, Kind::Sparsifier, [](Ctx& c, void* h) {
    c.sparseStats.size = sizeof(c.sparseStats);
    return scclSparsifierGetStats(asSp(h), &c.sparseStats);
  });
  m.add(gs, "NULL stats", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierGetStats(c.sp, nullptr); });
  for (size_t size : {size_t{0}, size_t{8}, size_t{15}})
    m.add(gs, "stats size " + std::to_string(size), scclInvalidArgument, [size](Ctx& c) {
      c.sparseStats.size = size;
      return scclSparsifierGetStats(c.sp, &c.sparseStats);
    });
  const std::string rc = "scclSparsifierGetRankCounts";
  m.handles(rc, Kind::Sparsifier, [](Ctx& c, void* h) {
    return scclSparsifierGetRankCounts(asSp(h), c.counts.data(), kRanks);
  });
  m.add(rc, "NULL counts", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierGetRankCounts(c.sp, nullptr, kRanks); });
  for (int n : {0, 1, kRanks + 1, -1, INT_MAX, INT_MIN})
    m.add(rc, "nranks " + std::to_string(n), scclInvalidArgument,
          [n](Ctx& c) { return scclSparsifierGetRankCounts(c.sp, c.counts.data(), n); });
}

void addEventCases(Matrix& m) {
  const std::string js = "scclEventConfigFromJson";
  m.add(js, "NULL json", scclInvalidArgument,
        [](Ctx& c) { return scclEventConfigFromJson(nullptr, &c.eventConfig); });
  m.add(js, "NULL config", scclInvalidArgument,
        [](Ctx&) { return scclEventConfigFromJson("{}", nullptr); });
  for (const char* text : {"",
                           "not json",
                           "{",
                           "[]",
                           "42",
                           "{} x",
                           "{\"no_such_key\": 1}",
                           "{\"threshold\": \"x\"}",
                           "{\"threshold\": 1}",
                           "{\"horizon\": -1}",
                           "{\"horizon\": \"x\"}",
                           "{\"static_threshold\": -1}",
                           "{\"history\": 0}",
                           "{\"history\": -3}",
                           "{\"initial_passes\": -1}",
                           "{\"synchronous\": 2}",
                           "{\"synchronous\": \"yes\"}",
                           "{\"max_silent_passes\": -1}",
                           "{\"averaging\": \"median\"}",
                           "{\"averaging\": 0}"}) {
    std::string t = text;
    m.add(js, "json " + t, scclInvalidArgument, [t](Ctx&) {
      scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
      return scclEventConfigFromJson(t.c_str(), &config);
    });
  }

  // scclEventCommCreate: every rank passes the same bad argument, so all return at once.
  const std::string cr = "scclEventCommCreate";
  struct Args {
    scclEventComm_t* out;
    scclComm_t comm;
    size_t count;
    scclDataType_t dtype;
    const size_t* sizes;
    int ntensors;
    const int* neighbours;
    int nneighbours;
    const double* weights;
    const scclEventConfig_t* config;
  };
  auto ev = [&m, &cr](const std::string& name, std::function<void(Ctx&, Args&)> edit) {
    m.add(cr, name, scclInvalidArgument, [edit](Ctx& c) {
      scclEventComm_t out = nullptr;
      scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
      Args a{&out, c.comm, kCount, scclFloat32, c.tensorSizes, 2, nullptr, 0, nullptr, &config};
      edit(c, a);
      return scclEventCommCreate(a.out, a.comm, a.count, a.dtype, a.sizes, a.ntensors, a.neighbours,
                                 a.nneighbours, a.weights, a.config);
    });
  };
  static const int kSelf[2][1] = {{0}, {1}};
  static const int kOutOfRange[] = {kRanks};
  static const int kNegative[] = {-1};
  static const int kDuplicate[2][2] = {{1, 1}, {0, 0}};
  static const double kNegWeights[] = {1.5, -0.5};
  static const double kBadSum[] = {0.5, 0.4};
  static const double kNanWeights[] = {NAN, 0.5};
  static const size_t kZeroSize[] = {kCount, 0};
  static const size_t kShortSum[] = {kCount / 2, kCount / 2 - 1};
  static const size_t kWrapSum[] = {kMax, kCount + 1};  // sums to kCount modulo 2^64
  ev("NULL eventComm", [](Ctx&, Args& a) { a.out = nullptr; });
  for (auto& [name, get] : badHandles(Kind::Comm)) {
    auto g = get;
    ev("handle: " + name, [g](Ctx& c, Args& a) { a.comm = asComm(g(c)); });
  }
  for (int bits : kBadDtypes)
    ev("dtype " + std::to_string(bits),
       [bits](Ctx&, Args& a) { a.dtype = badEnum<scclDataType_t>(bits); });
  ev("dtype float16", [](Ctx&, Args& a) { a.dtype = scclFloat16; });
  ev("dtype int32", [](Ctx&, Args& a) { a.dtype = scclInt32; });
  ev("count 0", [](Ctx&, Args& a) { a.count = 0; });
  ev("count != sum of sizes", [](Ctx&, Args& a) { a.count = kCount + 1; });
  ev("count SIZE_MAX", [](Ctx&, Args& a) { a.count = kMax; });
  ev("count 2^32 + count (2^32 off)", [](Ctx&, Args& a) { a.count = k2p32 + kCount; });
  ev("sizes summing to count modulo 2^64", [](Ctx&, Args& a) { a.sizes = kWrapSum; });
  ev("NULL tensorSizes", [](Ctx&, Args& a) { a.sizes = nullptr; });
  ev("ntensors 0", [](Ctx&, Args& a) { a.ntensors = 0; });
  ev("ntensors -1", [](Ctx&, Args& a) { a.ntensors = -1; });
  ev("ntensors INT_MIN", [](Ctx&, Args& a) { a.ntensors = INT_MIN; });
  ev("a tensor of 0 elements", [](Ctx&, Args& a) { a.sizes = kZeroSize; });
  ev("sizes short of count", [](Ctx&, Args& a) { a.sizes = kShortSum; });
  ev("neighbour self", [](Ctx& c, Args& a) { a.neighbours = kSelf[c.rank], a.nneighbours = 1; });
  ev("neighbour nranks", [](Ctx&, Args& a) { a.neighbours = kOutOfRange, a.nneighbours = 1; });
  ev("neighbour -1", [](Ctx&, Args& a) { a.neighbours = kNegative, a.nneighbours = 1; });
  ev("duplicate neighbours",
     [](Ctx& c, Args& a) { a.neighbours = kDuplicate[c.rank], a.nneighbours = 2; });
  ev("nneighbours -1", [](Ctx&, Args& a) { a.nneighbours = -1; });
  ev("NULL neighbours with nneighbours 1", [](Ctx&, Args& a) { a.nneighbours = 1; });
  ev("negative weight", [](Ctx&, Args& a) { a.weights = kNegWeights; });
  ev("weights not summing to 1", [](Ctx&, Args& a) { a.weights = kBadSum; });
  ev("NaN weight", [](Ctx&, Args& a) { a.weights = kNanWeights; });
  ev("NULL config", [](Ctx&, Args& a) { a.config = nullptr; });
  ev("config magic 0", [](Ctx& c, Args& a) {
    c.eventConfig = SCCL_EVENT_CONFIG_INITIALIZER;
    c.eventConfig.magic = 0;
    a.config = &c.eventConfig;
  });
  ev("config horizon -1", [](Ctx& c, Args& a) {
    c.eventConfig = SCCL_EVENT_CONFIG_INITIALIZER;
    c.eventConfig.horizon = -1;
    a.config = &c.eventConfig;
  });
  ev("config history 0", [](Ctx& c, Args& a) {
    c.eventConfig = SCCL_EVENT_CONFIG_INITIALIZER;
    c.eventConfig.history = 0;
    a.config = &c.eventConfig;
  });
  ev("config thresholdMode 5", [](Ctx& c, Args& a) {
    c.eventConfig = SCCL_EVENT_CONFIG_INITIALIZER;
    c.eventConfig.thresholdMode = badEnum<scclEventThresholdMode_t>(5);
    a.config = &c.eventConfig;
  });
  ev("config averaging -1", [](Ctx& c, Args& a) {
    c.eventConfig = SCCL_EVENT_CONFIG_INITIALIZER;
    c.eventConfig.averaging = badEnum<scclEventAveraging_t>(-1);
    a.config = &c.eventConfig;
  });

  m.handles("scclEventCommDestroy", Kind::Event,
            [](Ctx&, void* h) { return scclEventCommDestroy(asEc(h)); });

  for (const std::string fn : {"scclEventCommStep", "scclEventCommAverageModel"}) {
    bool step = fn == "scclEventCommStep";
    auto call = [step](Ctx&, scclEventComm_t ec, void* params, void* out, size_t count,
                       scclDataType_t d, void* stream) {
      return step ? scclEventCommStep(ec, params, count, d, stream)
                  : scclEventCommAverageModel(ec, params, out, count, d, stream);
    };
    m.handles(fn, Kind::Event, [call](Ctx& c, void* h) {
      return call(c, asEc(h), c.send.data(), c.recv.data(), kCount, scclFloat32, nullptr);
    });
    for (size_t count : {size_t{0}, kCount - 1, kCount + 1, k2p31, k2p32 + kCount, kMax})
      m.add(fn, "count " + std::to_string(count), scclInvalidArgument, [call, count](Ctx& c) {
        return call(c, c.ec, c.send.data(), c.recv.data(), count, scclFloat32, nullptr);
      });
    m.dtypes(fn, [call](Ctx& c, scclDataType_t d) {
      return call(c, c.ec, c.send.data(), c.recv.data(), kCount, d, nullptr);
    });
    m.add(fn, "dtype float64 (not the event communicator's)", scclInvalidArgument, [call](Ctx& c) {
      return call(c, c.ec, c.send.data(), c.recv.data(), kCount, scclFloat64, nullptr);
    });
    m.add(fn, "NULL params", scclInvalidArgument, [call](Ctx& c) {
      return call(c, c.ec, nullptr, c.recv.data(), kCount, scclFloat32, nullptr);
    });
    if (!step)
      m.add(fn, "NULL out", scclInvalidArgument, [call](Ctx& c) {
        return call(c, c.ec, c.send.data(), nullptr, kCount, scclFloat32, nullptr);
      });
    m.add(fn, "stream with host memory", scclInvalidArgument, [call](Ctx& c) {
      return call(c, c.ec, c.send.data(), c.recv.data(), kCount, scclFloat32, streamOne());
    });
  }

  const std::string gs = "scclEventCommGetStats";
  m.handles(gs, Kind::Event, [](Ctx& c, void* h) {
    c.eventStats.size = sizeof(c.eventStats);
    return scclEventCommGetStats(asEc(h), &c.eventStats);
  });
  m.add(gs, "NULL stats", scclInvalidArgument,
        [](Ctx& c) { return scclEventCommGetStats(c.ec, nullptr); });
  for (size_t size : {size_t{0}, size_t{8}, size_t{15}})
    m.add(gs, "stats size " + std::to_string(size), scclInvalidArgument, [size](Ctx& c) {
      c.eventStats.size = size;
      return scclEventCommGetStats(c.ec, &c.eventStats);
    });
  const std::string ts = "scclEventCommGetTensorStats";
  m.handles(ts, Kind::Event, [](Ctx& c, void* h) {
    return scclEventCommGetTensorStats(asEc(h), c.counts.data(), c.thresholds.data(), 2);
  });
  m.add(ts, "NULL events", scclInvalidArgument,
        [](Ctx& c) { return scclEventCommGetTensorStats(c.ec, nullptr, c.thresholds.data(), 2); });
  for (int n : {0, 1, 3, -1, INT_MAX, INT_MIN})
    m.add(ts, "ntensors " + std::to_string(n), scclInvalidArgument, [n](Ctx& c) {
      return scclEventCommGetTensorStats(c.ec, c.counts.data(), c.thresholds.data(), n);
    });
}

void addSketchCases(Matrix& m) {
  // Valid shape: 64 float64 values (the table buffer), block 8, 1 row of width 64.
  struct Args {
    const void* in;
    size_t count;
    scclDataType_t dtype;
    size_t block;
    const uint8_t* bitmap;
    int rows;
    size_t width;
    void* out;
    void* stream;
  };
  auto shapes = [](std::function<void(const std::string&, std::function<void(Args&)>)> add,
                   bool table) {
    add("NULL input", [](Args& a) { a.in = nullptr; });
    add("NULL output", [](Args& a) { a.out = nullptr; });
    for (int bits : kBadDtypes)
      add("dtype " + std::to_string(bits),
          [bits](Args& a) { a.dtype = badEnum<scclDataType_t>(bits); });
    add("dtype float16", [](Args& a) { a.dtype = scclFloat16; });
    add("dtype int32", [](Args& a) { a.dtype = scclInt32; });
    add("dtype int8", [](Args& a) { a.dtype = scclInt8; });
    add("NULL input and output", [](Args& a) { a.in = nullptr, a.out = nullptr; });
    add("blockSize 0 and count 0", [](Args& a) { a.block = 0, a.count = 0; });
    add("blockSize 0", [](Args& a) { a.block = 0; });
    add("count SIZE_MAX", [](Args& a) { a.count = kMax; });
    add("count SIZE_MAX / 8 + 1 float64", [](Args& a) { a.count = kMax / 8 + 1; });
    add("count SIZE_MAX / 4 + 1 float32",
        [](Args& a) { a.count = kMax / 4 + 1, a.dtype = scclFloat32; });
    add("count 2^32 NULL input", [](Args& a) { a.count = k2p32, a.in = nullptr; });
    add("count 2^31 NULL output", [](Args& a) { a.count = k2p31, a.out = nullptr; });
    add("stream with host memory", [](Args& a) { a.stream = streamOne(); });
    if (table) {
      add("rows 0", [](Args& a) { a.rows = 0; });
      add("rows -1", [](Args& a) { a.rows = -1; });
      add("rows 17", [](Args& a) { a.rows = 17; });
      add("rows INT_MIN", [](Args& a) { a.rows = INT_MIN; });
      add("rows INT_MAX", [](Args& a) { a.rows = INT_MAX; });
      add("width 0", [](Args& a) { a.width = 0; });
      add("width 2^32", [](Args& a) { a.width = k2p32; });
      add("width SIZE_MAX", [](Args& a) { a.width = kMax; });
    }
  };
  auto base = [](Ctx& c) {
    return Args{c.table.data(), kCount,        scclFloat64, 8, c.bitmap.data(), 1,
                kCount,         c.recv.data(), nullptr};
  };
  shapes(
      [&](const std::string& name, std::function<void(Args&)> e) {
        m.add("scclCountSketchEncode", name, scclInvalidArgument, [e, base](Ctx& c) {
          Args a = base(c);
          a.out = c.table.data() + kCount;  // table: 64 doubles after the values
          e(a);
          return scclCountSketchEncode(a.in, a.count, a.dtype, a.block, a.bitmap, a.rows, a.width,
                                       7, a.out, a.stream);
        });
      },
      true);
  shapes(
      [&](const std::string& name, std::function<void(Args&)> e) {
        m.add("scclCountSketchDecode", name, scclInvalidArgument, [e, base](Ctx& c) {
          Args a = base(c);
          a.out = c.table.data() + kCount;  // out: 64 doubles after the table
          e(a);
          return scclCountSketchDecode(a.in, a.dtype, a.rows, a.width, 7, a.count, a.block,
                                       a.bitmap, a.out, a.stream);
        });
      },
      true);
  shapes(
      [&](const std::string& name, std::function<void(Args&)> e) {
        m.add("scclCountSketchMarkBlocks", name, scclInvalidArgument, [e, base](Ctx& c) {
          Args a = base(c);
          a.out = c.bitmap.data();
          e(a);
          return scclCountSketchMarkBlocks(a.in, a.count, a.dtype, a.block,
                                           static_cast<uint8_t*>(a.out), a.stream);
        });
      },
      false);
}

std::vector<Case> buildMatrix() {
  Matrix m;
  addCommunicatorCases(m);
  addCollectiveCases(m);
  addSelectCases(m);
  addSparseCases(m);
  addEventCases(m);
  addSketchCases(m);
  return m.cases;
}

// A live handle of another type passed as a communicator (a sparsifier, an event communicator)
// once crashed the library: the error was recorded inside that object as if it were a
// communicator. The live-handle registry now records each handle's kind; these cases run like
// every other.
// Exported functions whose arguments leave fewer than 20 distinct invalid calls.
const std::map<std::string, std::string> kExempt = {
    {"scclGetUniqueId", "one output pointer: NULL is its only invalid value"},
    {"scclGetVersion", "one output pointer: NULL is its only invalid value"},
    {"scclGetErrorString",
     "every value is valid (a static string, never NULL); 6 out-of-range "
     "values checked"},
};

std::vector<std::string> exportedFunctions() {
  std::ifstream in(SCCL_PUBLIC_HEADER);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  std::vector<std::string> names;
  std::regex decl(R"(SCCL_API\s+[^;(]*?\b(sccl\w+)\s*\()");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), decl); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("bad argument matrix covers every exported function", "[badargs]") {
  std::vector<std::string> exported = exportedFunctions();
  REQUIRE(exported.size() >= 30);
  std::map<std::string, int> counts;
  for (const Case& c : buildMatrix()) counts[c.fn]++;
  int total = 0;
  for (auto& [fn, n] : counts) total += n;
  std::set<std::string> exportedSet(exported.begin(), exported.end());
  for (auto& [fn, n] : counts) {
    INFO(fn);
    CHECK(exportedSet.count(fn) == 1);  // no case for a function the header does not export
  }
  for (const std::string& fn : exported) {
    WARN(fn << ": " << counts[fn] << " cases"
            << (kExempt.count(fn) ? " (exempt: " + kExempt.at(fn) + ")" : std::string()));
    CHECK(counts[fn] >= 1);
    if (!kExempt.count(fn)) CHECK(counts[fn] >= 20);
  }
  WARN(exported.size() << " exported functions, " << total << " cases, every one run");
}

TEST_CASE("bad argument matrix returns the documented codes and leaves the communicator usable",
          "[badargs]") {
  const std::vector<Case> cases = buildMatrix();
  scclUniqueId ids[4];
  for (scclUniqueId& id : ids) REQUIRE(scclGetUniqueId(&id) == scclSuccess);
  std::vector<sccl_test::RankLog> logs;
  for (int r = 0; r < kRanks; ++r) logs.emplace_back(r);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      sccl_test::RankLog& log = logs[r];
      Ctx c;
      c.rank = r;
      auto ok = [&](scclResult_t res, const char* what) {
        return log.checkResult(res, scclSuccess, what);
      };
      if (!ok(scclCommInitRank(&c.comm, kRanks, ids[0], r), "init comm")) return;
      if (!ok(scclCommInitRank(&c.other, kRanks, ids[1], r), "init other")) return;
      if (!ok(scclCommInitRank(&c.deadComm, kRanks, ids[2], r), "init dead")) return;
      if (!ok(scclCommInitRank(&c.abortedComm, kRanks, ids[3], r), "init aborted")) return;
      if (!ok(scclGetUniqueId(&c.id), "unique id")) return;
      ok(scclSparsifierCreate(&c.sp, c.comm, kCount, scclFloat32, &c.sparseConfig), "sp");
      ok(scclSparsifierCreate(&c.spOther, c.other, kCount, scclFloat32, &c.sparseConfig), "sp2");
      ok(scclSparsifierCreate(&c.deadSp, c.comm, kCount, scclFloat32, &c.sparseConfig), "sp3");
      ok(scclEventCommCreate(&c.ec, c.comm, kCount, scclFloat32, c.tensorSizes, 2, nullptr, 0,
                             nullptr, &c.eventConfig),
         "ec");
      ok(scclEventCommCreate(&c.deadEc, c.comm, kCount, scclFloat32, c.tensorSizes, 2, nullptr, 0,
                             nullptr, &c.eventConfig),
         "ec2");
      ok(scclSparsifierDestroy(c.deadSp), "destroy sp3");
      ok(scclEventCommDestroy(c.deadEc), "destroy ec2");
      ok(scclCommDestroy(c.deadComm), "destroy dead");
      ok(scclCommAbort(c.abortedComm), "abort");
      c.freedHeap = new float[4];
      delete[] c.freedHeap;
      if (!log.failures().empty()) return;

      std::string current;
      auto checkUsable = [&](const std::string& fn) {
        std::vector<float> in(5, float(r + 1)), out(5, 0.0f);
        scclResult_t res =
            scclAllReduce(in.data(), out.data(), 5, scclFloat32, scclSum, c.comm, nullptr);
        log.checkResult(res, scclSuccess, "all-reduce after the " + fn + " cases");
        for (float v : out) log.check(v == 3.0f, "all-reduce sum after the " + fn + " cases");
      };
      for (const Case& k : cases) {
        if (k.fn != current && !current.empty()) checkUsable(current);
        current = k.fn;
        if (std::getenv("SCCL_BADARGS_TRACE") != nullptr)
          std::fprintf(stderr, "rank %d: %s [%s]\n", r, k.fn.c_str(), k.name.c_str());
        scclResult_t got = k.call(c);
        std::string what = k.fn + " [" + k.name + "]";
        log.checkResult(got, k.want, what);
        if (k.want != scclSuccess && got != scclSuccess)
          log.check(std::strlen(scclGetLastError(nullptr)) > 0, what + ": empty last error");
      }
      checkUsable(current);
      ok(scclEventCommDestroy(c.ec), "destroy ec");
      ok(scclSparsifierDestroy(c.sp), "destroy sp");
      ok(scclSparsifierDestroy(c.spOther), "destroy sp2");
      ok(scclCommDestroy(c.other), "destroy other");
      ok(scclCommDestroy(c.comm), "destroy comm");
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> failures;
  for (auto& log : logs)
    failures.insert(failures.end(), log.failures().begin(), log.failures().end());
  WARN(cases.size() << " cases on each of " << kRanks << " ranks, " << failures.size()
                    << " failures");
  REQUIRE_NO_RANK_FAILURES(failures);
}
