// The bad-argument matrix's shared pieces (tests/unit/test_bad_argument_matrix.cc and the
// bad_arguments_*.cc files that fill it): one rank's context of live, destroyed and foreign
// handles and buffers, a case (function, name, documented code, the call), the generators of bad
// handles, dtypes and overflowing counts, and the per-family functions that add cases.
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "support/local_ranks.h"

namespace sccl_badargs {

inline constexpr int kRanks = 2;
inline constexpr size_t kCount = 64;  // elements of every valid buffer, sparsifier and event comm
inline constexpr size_t kMax = std::numeric_limits<size_t>::max();
inline constexpr size_t k2p31 = size_t{1} << 31;
inline constexpr size_t k2p32 = size_t{1} << 32;

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
inline Enum badEnum(int bits) {
  static_assert(sizeof(Enum) == sizeof(int), "ABI enums are int-sized");
  Enum value;
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

inline const int kBadDtypes[] = {-1, 10, 11, 255, INT_MAX, INT_MIN};
inline const int kBadOps[] = {-1, 4, 5, INT_MAX, INT_MIN};

enum class Kind { Comm, Sparsifier, Event };

inline void* liveOf(Ctx& c, Kind k) {
  switch (k) {
    case Kind::Comm: return c.comm;
    case Kind::Sparsifier: return c.sp;
    case Kind::Event: return c.ec;
  }
  return nullptr;
}

// Twenty pointers that are not a live handle of kind k: NULL, destroyed, live handles of the
// other kinds (caught by the handle magic), and addresses that are no handle at all.
inline std::vector<std::pair<std::string, std::function<void*(Ctx&)>>> badHandles(Kind k) {
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

inline scclComm_t asComm(void* p) {
  return static_cast<scclComm_t>(p);
}
inline scclSparsifier_t asSp(void* p) {
  return static_cast<scclSparsifier_t>(p);
}
inline scclEventComm_t asEc(void* p) {
  return static_cast<scclEventComm_t>(p);
}
inline void* streamOne() {
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

// count x element size overflowing size_t, per dtype, and the 2^31 / 2^32 boundaries (with a NULL
// buffer: the library cannot know a buffer's length, so a huge count alone over a real buffer is
// not detectable).
struct CountArg {
  const char* name;
  size_t count;
  scclDataType_t dtype;
  bool nullBuffer;
};
inline const CountArg kOverflowCounts[] = {
    {"count SIZE_MAX float32", kMax, scclFloat32, false},
    {"count SIZE_MAX / 4 + 1 float32", kMax / 4 + 1, scclFloat32, false},
    {"count 2^62 float32", size_t{1} << 62, scclFloat32, false},
    {"count SIZE_MAX / 8 + 1 float64", kMax / 8 + 1, scclFloat64, false},
    {"count SIZE_MAX / 2 + 1 float16", kMax / 2 + 1, scclFloat16, false},
    {"count 2^31 with NULL buffers", k2p31, scclFloat32, true},
    {"count 2^32 with NULL buffers", k2p32, scclFloat32, true},
};

// One function per family of exported functions, each in its own file.
void addCommunicatorCases(Matrix& m);  // bad_arguments_comm.cc (also the error and version calls)
void addCollectiveCases(Matrix& m);    // bad_arguments_comm.cc
void addSelectCases(Matrix& m);        // bad_arguments_comm.cc
void addSparseCases(Matrix& m);        // bad_arguments_sparse.cc
void addSketchCases(Matrix& m);        // bad_arguments_sparse.cc
void addEventCases(Matrix& m);         // bad_arguments_event.cc

}  // namespace sccl_badargs
