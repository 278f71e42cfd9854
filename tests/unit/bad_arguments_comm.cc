// Bad-argument cases of the communicator, error, collective and selection functions.
#include "sccl_build_config.h"
#include "support/bad_argument_matrix.h"

namespace sccl_badargs {

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
  // A transport the library knows but this build lacks; a build with every one has no such case.
#if !SCCL_BUILD_WITH_NCCL
  withConfig("transport not built in (nccl)", scclInvalidUsage,
             [](scclConfig_t& x) { x.transport = "nccl"; });
#elif !SCCL_BUILD_WITH_UCX
  withConfig("transport not built in (ucx)", scclInvalidUsage,
             [](scclConfig_t& x) { x.transport = "ucx"; });
#elif !SCCL_BUILD_WITH_MPI
  withConfig("transport not built in (mpi)", scclInvalidUsage,
             [](scclConfig_t& x) { x.transport = "mpi"; });
#endif
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

  // scclCommSplit: both ranks pass the same bad argument, so each returns its own error (one bad
  // rank among good ones: tests/unit/test_comm_split.cc). Only the handle is checked before the
  // split's exchange; the rest is refused after it, the same on every rank.
  const std::string split = "scclCommSplit";
  m.handles(split, Kind::Comm, [](Ctx& c, void* h) {
    scclComm_t out = nullptr;
    return scclCommSplit(asComm(h), 0, c.rank, &out, nullptr);
  });
  m.add(split, "NULL newcomm", scclInvalidArgument,
        [](Ctx& c) { return scclCommSplit(c.comm, 0, c.rank, nullptr, nullptr); });
  m.add(split, "NULL newcomm with SCCL_SPLIT_NOCOLOR", scclInvalidArgument,
        [](Ctx& c) { return scclCommSplit(c.comm, SCCL_SPLIT_NOCOLOR, c.rank, nullptr, nullptr); });
  for (int color : {-2, -3, -1000, INT_MIN}) {
    m.add(split, "color " + std::to_string(color), scclInvalidArgument, [color](Ctx& c) {
      scclComm_t out = nullptr;
      return scclCommSplit(c.comm, color, c.rank, &out, nullptr);
    });
  }
  auto splitConfig = [&m, &split](const std::string& name, scclResult_t want,
                                  std::function<void(scclConfig_t&)> edit) {
    m.add(split, "config " + name, want, [edit](Ctx& c) {
      BigConfig big{};
      big.config = SCCL_CONFIG_INITIALIZER;
      edit(big.config);
      scclComm_t out = nullptr;
      return scclCommSplit(c.comm, 0, c.rank, &out, &big.config);
    });
  };
  splitConfig("magic 0", scclInvalidArgument, [](scclConfig_t& x) { x.magic = 0; });
  splitConfig("size 8", scclInvalidArgument, [](scclConfig_t& x) { x.size = 8; });
  splitConfig("newer version and larger size", scclInvalidArgument, [](scclConfig_t& x) {
    x.version = SCCL_VERSION_CODE + 1;
    x.size = sizeof(scclConfig_t) + 8;
  });
  splitConfig("unknown transport", scclInvalidArgument,
              [](scclConfig_t& x) { x.transport = "carrier-pigeon"; });
  splitConfig("timeout 0", scclInvalidArgument, [](scclConfig_t& x) { x.timeoutMs = 0; });
  splitConfig("timeout -1", scclInvalidArgument, [](scclConfig_t& x) { x.timeoutMs = -1; });
  // A NOCOLOR rank's config is checked too.
  m.add(split, "config timeout 0 with SCCL_SPLIT_NOCOLOR", scclInvalidArgument, [](Ctx& c) {
    scclConfig_t config = SCCL_CONFIG_INITIALIZER;
    config.timeoutMs = 0;
    scclComm_t out = nullptr;
    return scclCommSplit(c.comm, SCCL_SPLIT_NOCOLOR, c.rank, &out, &config);
  });
#if !SCCL_BUILD_WITH_NCCL
  splitConfig("transport not built in (nccl)", scclInvalidUsage,
              [](scclConfig_t& x) { x.transport = "nccl"; });
#endif

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

  // scclReduceScatter (send holds kRanks blocks of kCount / kRanks floats)
  const std::string rs = "scclReduceScatter";
  constexpr size_t kBlock = kCount / kRanks;
  m.handles(rs, Kind::Comm, [](Ctx& c, void* h) {
    return scclReduceScatter(c.send.data(), c.recv.data(), kBlock, scclFloat32, scclSum, asComm(h),
                             nullptr);
  });
  m.add(rs, "NULL sendbuf", scclInvalidArgument, [](Ctx& c) {
    return scclReduceScatter(nullptr, c.recv.data(), kBlock, scclFloat32, scclSum, c.comm, nullptr);
  });
  m.add(rs, "NULL recvbuf", scclInvalidArgument, [](Ctx& c) {
    return scclReduceScatter(c.send.data(), nullptr, kBlock, scclFloat32, scclSum, c.comm, nullptr);
  });
  m.dtypes(rs, [](Ctx& c, scclDataType_t d) {
    return scclReduceScatter(c.send.data(), c.recv.data(), kBlock / 2, d, scclSum, c.comm, nullptr);
  });
  for (int bits : kBadOps)
    m.add(rs, "op " + std::to_string(bits), scclInvalidArgument, [bits](Ctx& c) {
      return scclReduceScatter(c.send.data(), c.recv.data(), kBlock, scclFloat32,
                               badEnum<scclRedOp_t>(bits), c.comm, nullptr);
    });
  m.add(rs, "scclAvg on int32", scclInvalidArgument, [](Ctx& c) {
    return scclReduceScatter(c.send.data(), c.recv.data(), kBlock, scclInt32, scclAvg, c.comm,
                             nullptr);
  });
  for (const CountArg& a : kOverflowCounts)
    m.add(rs, a.name, scclInvalidArgument, [a](Ctx& c) {
      return scclReduceScatter(a.nullBuffer ? nullptr : c.send.data(),
                               a.nullBuffer ? nullptr : c.recv.data(), a.count, a.dtype, scclSum,
                               c.comm, nullptr);
    });
  m.add(rs, "recvcount x nranks overflows (2^61 float32)", scclInvalidArgument, [](Ctx& c) {
    return scclReduceScatter(c.send.data(), c.recv.data(), size_t{1} << 61, scclFloat32, scclSum,
                             c.comm, nullptr);
  });
  m.add(rs, "recvbuf overlaps sendbuf off its block", scclInvalidArgument, [](Ctx& c) {
    return scclReduceScatter(c.send.data(), c.send.data() + (c.rank == 0 ? 1 : 0), kBlock,
                             scclFloat32, scclSum, c.comm, nullptr);
  });
  m.add(rs, "stream with host memory", scclInvalidArgument, [](Ctx& c) {
    return scclReduceScatter(c.send.data(), c.recv.data(), kBlock, scclFloat32, scclSum, c.comm,
                             streamOne());
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

}  // namespace sccl_badargs
