// Bad-argument cases of the event communicator (EventGraD).
#include "support/bad_argument_matrix.h"

namespace sccl_badargs {

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
  for (size_t size : {size_t{0}, size_t{8}, size_t{16}, sizeof(scclEventStats_t) - 1,
                      size_t{4097}, SIZE_MAX})
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
  // Checkpoints: every rank runs every case, so the import's refusals agree together.
  const std::string ss = "scclEventCommGetStateSize";
  m.handles(ss, Kind::Event, [](Ctx&, void* h) {
    size_t bytes = 0;
    return scclEventCommGetStateSize(asEc(h), &bytes);
  });
  m.add(ss, "NULL size", scclInvalidArgument,
        [](Ctx& c) { return scclEventCommGetStateSize(c.ec, nullptr); });
  const std::string ex = "scclEventCommExportState";
  m.handles(ex, Kind::Event, [](Ctx& c, void* h) {
    return scclEventCommExportState(asEc(h), c.zeros, sizeof(c.zeros), nullptr);
  });
  m.add(ex, "NULL buffer", scclInvalidArgument,
        [](Ctx& c) { return scclEventCommExportState(c.ec, nullptr, kMax, nullptr); });
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{79}, size_t{80}})
    m.add(ex, "buffer of " + std::to_string(bytes) + " bytes", scclInvalidArgument,
          [bytes](Ctx& c) { return scclEventCommExportState(c.ec, c.zeros, bytes, nullptr); });
  const std::string im = "scclEventCommImportState";
  m.handles(im, Kind::Event, [](Ctx& c, void* h) {
    return scclEventCommImportState(asEc(h), c.zeros, sizeof(c.zeros));
  });
  m.add(im, "NULL buffer of 80 bytes", scclInvalidArgument,
        [](Ctx& c) { return scclEventCommImportState(c.ec, nullptr, 80); });
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{80}, size_t{256}})
    m.add(im, std::to_string(bytes) + " zero bytes", scclInvalidArgument,
          [bytes](Ctx& c) { return scclEventCommImportState(c.ec, c.zeros, bytes); });
  m.add(im, "a forged block", scclInvalidArgument,
        [](Ctx& c) { return scclEventCommImportState(c.ec, c.forged, sizeof(c.forged)); });
}

}  // namespace sccl_badargs
