// Bad-argument cases of the sparse all-reduce, its config and the count-sketch building blocks.
#include <cstddef>
#include <cfloat>
#include <cmath>

#include "support/bad_argument_matrix.h"

namespace sccl_badargs {

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
  // Valid ops of the dense collectives that a sparse all-reduce has no meaning for.
  for (scclRedOp_t op : {scclMax, scclMin})
    m.add(sa, op == scclMax ? "scclMax" : "scclMin", scclInvalidArgument, [op](Ctx& c) {
      return scclSparseAllreduce(c.send.data(), c.recv.data(), kCount, scclFloat32, op, c.sp,
                                 c.comm, nullptr);
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
  // Below the first release's struct (an uninitialised size, typically) and beyond any plausible
  // one: refused, never a partial copy.
  const size_t first_release = offsetof(scclSparseStats_t, meanAbsDensityError) + sizeof(double);
  for (size_t size :
       {size_t{0}, size_t{8}, size_t{15}, size_t{16}, first_release - 1, size_t{4097}, SIZE_MAX})
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
  const std::string ms = "scclSparsifierMaskSent";
  m.handles(ms, Kind::Sparsifier, [](Ctx& c, void* h) {
    return scclSparsifierMaskSent(asSp(h), c.recv.data(), kCount, scclFloat32);
  });
  m.add(ms, "NULL buffer", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierMaskSent(c.sp, nullptr, kCount, scclFloat32); });
  for (size_t count : {size_t{0}, kCount - 1, kCount + 1, k2p32, kMax})
    m.add(ms, "count " + std::to_string(count), scclInvalidArgument, [count](Ctx& c) {
      return scclSparsifierMaskSent(c.sp, c.recv.data(), count, scclFloat32);
    });
  m.dtypes(ms, [](Ctx& c, scclDataType_t d) {
    return scclSparsifierMaskSent(c.sp, c.recv.data(), kCount, d);
  });
  for (scclDataType_t d : {scclInt32, scclInt8, scclUint64})
    m.add(ms, std::string("dtype ") + std::to_string(int(d)) + " (not a gradient type)",
          scclInvalidArgument,
          [d](Ctx& c) { return scclSparsifierMaskSent(c.sp, c.recv.data(), kCount, d); });
  const std::string ga = "scclSparsifierGetAlgorithm";
  m.handles(ga, Kind::Sparsifier, [](Ctx&, void* h) {
    const char* name = nullptr;
    return scclSparsifierGetAlgorithm(asSp(h), &name);
  });
  m.add(ga, "NULL name", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierGetAlgorithm(c.sp, nullptr); });
  const std::string ae = "scclSparsifierGetAsyncError";
  m.handles(ae, Kind::Sparsifier, [](Ctx&, void* h) {
    scclResult_t async = scclSuccess;
    return scclSparsifierGetAsyncError(asSp(h), &async);
  });
  m.add(ae, "NULL asyncError", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierGetAsyncError(c.sp, nullptr); });
  // Checkpoints. Every rank runs every case in the same order, so the import's refusals (each
  // rank's blob fails its own checks) pass through its agreement together.
  const std::string ss = "scclSparsifierGetStateSize";
  m.handles(ss, Kind::Sparsifier, [](Ctx&, void* h) {
    size_t bytes = 0;
    return scclSparsifierGetStateSize(asSp(h), &bytes);
  });
  m.add(ss, "NULL size", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierGetStateSize(c.sp, nullptr); });
  const std::string ex = "scclSparsifierExportState";
  m.handles(ex, Kind::Sparsifier, [](Ctx& c, void* h) {
    return scclSparsifierExportState(asSp(h), c.zeros, sizeof(c.zeros), nullptr);
  });
  m.add(ex, "NULL buffer", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierExportState(c.sp, nullptr, kMax, nullptr); });
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{79}, size_t{80}})
    m.add(ex, "buffer of " + std::to_string(bytes) + " bytes", scclInvalidArgument,
          [bytes](Ctx& c) { return scclSparsifierExportState(c.sp, c.zeros, bytes, nullptr); });
  const std::string im = "scclSparsifierImportState";
  m.handles(im, Kind::Sparsifier, [](Ctx& c, void* h) {
    return scclSparsifierImportState(asSp(h), c.zeros, sizeof(c.zeros));
  });
  m.add(im, "NULL buffer of 80 bytes", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierImportState(c.sp, nullptr, 80); });
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{80}, size_t{256}})
    m.add(im, std::to_string(bytes) + " zero bytes", scclInvalidArgument,
          [bytes](Ctx& c) { return scclSparsifierImportState(c.sp, c.zeros, bytes); });
  m.add(im, "a forged block", scclInvalidArgument,
        [](Ctx& c) { return scclSparsifierImportState(c.sp, c.forged, sizeof(c.forged)); });
  // Invalid densities change nothing (the matrix's later valid calls run at the old density).
  const std::string sd = "scclSparsifierSetDensity";
  m.handles(sd, Kind::Sparsifier,
            [](Ctx&, void* h) { return scclSparsifierSetDensity(asSp(h), 0.5); });
  const std::pair<const char*, double> densities[] = {
      {"0", 0.0},         {"-0", -0.0},           {"-1", -1.0},         {"1.0000001", 1.0000001},
      {"2", 2.0},         {"-DBL_MIN", -DBL_MIN}, {"DBL_MAX", DBL_MAX}, {"-DBL_MAX", -DBL_MAX},
      {"+inf", HUGE_VAL}, {"-inf", -HUGE_VAL},    {"NaN", std::nan("")}};
  for (const auto& [name, d] : densities)
    m.add(sd, std::string("density ") + name, scclInvalidArgument,
          [d = d](Ctx& c) { return scclSparsifierSetDensity(c.sp, d); });
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

}  // namespace sccl_badargs
