// Event communicator checkpoints (scclEventCommGetStateSize / ExportState / ImportState): a
// synchronous EventGraD run saved after N passes and resumed by new communicators gives, over the
// next M passes, parameters, per-tensor events and thresholds, and statistics (but the times)
// bitwise those of the uninterrupted run; a malformed blob is refused on every rank and changes
// nothing; ranks that load blobs of different passes all get an error.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "support/local_ranks.h"

using namespace sccl_test;

namespace {

using Blob = std::vector<unsigned char>;
const std::vector<size_t> kSizes = {7, 130, 1, 64, 33};
constexpr size_t kCount = 7 + 130 + 1 + 64 + 33;

// A gradient step that moves every tensor by a different amount each pass, so that the adaptive
// triggers fire on some passes and not on others.
void gradientStep(std::vector<float>& x, int rank, uint64_t pass) {
  const double speed = 0.004 * double(1 + (pass * 7 + uint64_t(rank)) % 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] -= float(speed * (1.0 + double(i % 3)));
}

std::vector<float> initial(int rank) {
  std::vector<float> x(kCount);
  for (size_t i = 0; i < kCount; ++i) x[i] = float(std::cos(double(i) * 0.1 + rank));
  return x;
}

// Adaptive triggers, or static ones at `threshold`; both fire on some passes and not others under
// gradientStep's drift.
scclEventConfig_t eventConfig(scclEventAveraging_t averaging, double threshold = 0) {
  scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
  config.initialPasses = 2;
  config.horizon = 0.5;
  config.history = 3;
  config.averaging = averaging;
  if (threshold > 0) {
    config.thresholdMode = scclEventThresholdStatic;
    config.staticThreshold = threshold;
  }
  return config;
}

scclEventComm_t create(scclComm_t comm, const scclEventConfig_t& config, RankLog& log) {
  scclEventComm_t ec = nullptr;
  log.checkResult(scclEventCommCreate(&ec, comm, kCount, scclFloat32, kSizes.data(),
                                      int(kSizes.size()), nullptr, 0, nullptr, &config),
                  scclSuccess, "create");
  return ec;
}

Blob exportBlob(scclEventComm_t ec, RankLog& log) {
  size_t bytes = 0;
  log.checkResult(scclEventCommGetStateSize(ec, &bytes), scclSuccess, "GetStateSize");
  Blob blob(bytes);
  size_t written = 0;
  log.checkResult(scclEventCommExportState(ec, blob.data(), blob.size(), &written), scclSuccess,
                  "ExportState");
  log.check(written == bytes, "written == size");
  return blob;
}

void passes(scclEventComm_t ec, std::vector<float>& x, int rank, uint64_t first, int n,
            RankLog& log) {
  for (int p = 0; p < n; ++p) {
    gradientStep(x, rank, first + uint64_t(p));
    log.checkResult(scclEventCommStep(ec, x.data(), kCount, scclFloat32, nullptr), scclSuccess,
                    "pass " + std::to_string(first + uint64_t(p)));
  }
}

struct Outcome {
  std::vector<float> x;
  std::vector<uint64_t> events;
  std::vector<double> thresholds;
  std::vector<double> stats;  // but the times
};

Outcome outcomeOf(scclEventComm_t ec, const std::vector<float>& x) {
  Outcome o;
  o.x = x;
  o.events.resize(kSizes.size());
  o.thresholds.resize(kSizes.size());
  scclEventCommGetTensorStats(ec, o.events.data(), o.thresholds.data(), int(kSizes.size()));
  scclEventStats_t s{};
  s.size = sizeof(s);
  scclEventCommGetStats(ec, &s);
  o.stats = {double(s.passes),       double(s.events),        double(s.lastPassEvents),
             double(s.messagesSent), double(s.messagesDense), s.messageFraction,
             double(s.bytesSent),    double(s.bytesDense),    s.byteFraction,
             s.meanStaleness,        double(s.maxStaleness),  double(s.missingCopies)};
  return o;
}

bool same(const Outcome& a, const Outcome& b) {
  return a.x.size() == b.x.size() &&
         std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(float)) == 0 &&
         a.events == b.events &&
         std::memcmp(a.thresholds.data(), b.thresholds.data(),
                     a.thresholds.size() * sizeof(double)) == 0 &&
         std::memcmp(a.stats.data(), b.stats.data(), a.stats.size() * sizeof(double)) == 0;
}

void checkResume(const scclEventConfig_t& config, int nranks, int before, int after) {
  std::vector<Blob> saved(static_cast<size_t>(nranks));
  std::vector<std::vector<float>> saved_x(static_cast<size_t>(nranks));
  std::vector<Outcome> whole(static_cast<size_t>(nranks)), resumed(static_cast<size_t>(nranks));
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclEventComm_t ec = create(comm, config, log);
    if (ec == nullptr) return;
    std::vector<float> x = initial(rank);
    passes(ec, x, rank, 0, before, log);
    saved[size_t(rank)] = exportBlob(ec, log);
    saved_x[size_t(rank)] = x;  // the parameters are the caller's, saved beside the blob
    const Outcome at_save = outcomeOf(ec, x);
    passes(ec, x, rank, uint64_t(before), after, log);
    whole[size_t(rank)] = outcomeOf(ec, x);
    // Some tensor fired at least twice after the save: the load below must then replace copies
    // of later passes in the windows (without that, reads find them and the run breaks).
    bool twice = false;
    for (size_t t = 0; t < kSizes.size(); ++t)
      twice = twice || whole[size_t(rank)].events[t] >= at_save.events[t] + 2;
    log.check(twice, "a tensor fired twice after the save");
    // Back to the save on the same communicators: the windows hold the later passes' copies,
    // which the load's republished copies replace.
    const Blob& blob = saved[size_t(rank)];
    log.checkResult(scclEventCommImportState(ec, blob.data(), blob.size()), scclSuccess,
                    "ImportState into the running event communicator");
    x = saved_x[size_t(rank)];
    passes(ec, x, rank, uint64_t(before), after, log);
    log.check(same(outcomeOf(ec, x), whole[size_t(rank)]),
              "the same passes again after loading the save into the running communicator");
    scclEventCommDestroy(ec);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclEventComm_t ec = create(comm, config, log);
    if (ec == nullptr) return;
    const Blob& blob = saved[size_t(rank)];
    if (!log.checkResult(scclEventCommImportState(ec, blob.data(), blob.size()), scclSuccess,
                         "ImportState"))
      return;
    std::vector<float> x = saved_x[size_t(rank)];
    passes(ec, x, rank, uint64_t(before), after, log);
    resumed[size_t(rank)] = outcomeOf(ec, x);
    scclEventCommDestroy(ec);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  for (int r = 0; r < nranks; ++r) {
    INFO("rank " << r);
    REQUIRE(whole[size_t(r)].stats[1] > 0);                              // events fired
    REQUIRE(whole[size_t(r)].stats[1] < whole[size_t(r)].stats[4] / 2);  // and some did not
    REQUIRE(same(whole[size_t(r)], resumed[size_t(r)]));
  }
}

}  // namespace

TEST_CASE("event checkpoint: a synchronous run resumes bit for bit", "[event][checkpoint]") {
  SECTION("averaging copies, 4 ranks") {
    checkResume(eventConfig(scclEventAverageCopies, 0.15), 4, 9, 12);
  }
  SECTION("averaging differences, 3 ranks") {
    checkResume(eventConfig(scclEventAverageDifferences), 3, 7, 10);
  }
}

namespace {

void reseal(Blob& b) {
  const uint32_t crc =
      static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), b.data() + 16, b.size() - 16));
  std::memcpy(b.data() + 12, &crc, 4);
}

uint64_t word64(const Blob& b, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

}  // namespace

TEST_CASE("event checkpoint: malformed blobs and different passes are refused on every rank",
          "[event][checkpoint][hostile]") {
  const scclEventConfig_t config = eventConfig(scclEventAverageCopies);
  std::vector<Blob> at3(2), at5(2);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclEventComm_t ec = create(comm, config, log);
    if (ec == nullptr) return;
    std::vector<float> x = initial(rank);
    passes(ec, x, rank, 0, 3, log);
    at3[size_t(rank)] = exportBlob(ec, log);
    passes(ec, x, rank, 3, 2, log);
    at5[size_t(rank)] = exportBlob(ec, log);
    scclEventCommDestroy(ec);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  const size_t shared = word64(at3[1], 56), own_at = 80 + shared;
  struct Damage {
    std::string name;
    void (*apply)(Blob&, size_t);
  };
  const Damage damages[] = {
      {"truncated header", [](Blob& b, size_t) { b.resize(40); }},
      {"truncated copies", [](Blob& b, size_t) { b.resize(b.size() - 3); }},
      {"bit flipped", [](Blob& b, size_t) { b[b.size() / 2] ^= 4; }},
      {"a sparsifier's magic",
       [](Blob& b, size_t) {
         const uint64_t magic = 0x54504b434c434353ull;
         std::memcpy(b.data(), &magic, 8);
         reseal(b);
       }},
      {"another rank",
       [](Blob& b, size_t) {
         b[24] ^= 1;
         reseal(b);
       }},
      {"pass 2^63",
       [](Blob& b, size_t) {
         const uint64_t pass = uint64_t{1} << 63;
         std::memcpy(b.data() + 80, &pass, 8);
         reseal(b);
       }},
      {"tensor count",
       [](Blob& b, size_t own) {
         const uint64_t n = 6;
         std::memcpy(b.data() + own, &n, 8);
         reseal(b);
       }},
      {"a trigger with an event in the future",
       [](Blob& b, size_t own) {  // the first trigger's last event pass, after its last norm
         const int64_t pass = 99;
         std::memcpy(b.data() + own + 8 + 8, &pass, 8);
         reseal(b);
       }},
      {"a trigger with too many slopes",
       [](Blob& b, size_t own) {
         const uint64_t slopes = 4;
         std::memcpy(b.data() + own + 8 + 24, &slopes, 8);
         reseal(b);
       }},
  };
  failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclEventComm_t ec = create(comm, config, log);
    if (ec == nullptr) return;
    std::vector<float> x = initial(rank);
    passes(ec, x, rank, 0, 1, log);
    const Blob before = exportBlob(ec, log);
    for (const Damage& d : damages) {
      Blob blob = at3[size_t(rank)];
      if (rank == 1) d.apply(blob, own_at);
      log.checkResult(scclEventCommImportState(ec, blob.data(), blob.size()),
                      rank == 1 ? scclInvalidArgument : scclInvalidUsage, d.name);
      const Blob after = exportBlob(ec, log);
      log.check(after.size() == before.size() &&
                    std::memcmp(after.data() + 80, before.data() + 80, after.size() - 80) == 0,
                d.name + ": the event communicator changed");
    }
    const Blob& mixed = rank == 0 ? at3[0] : at5[1];
    log.checkResult(scclEventCommImportState(ec, mixed.data(), mixed.size()), scclInvalidUsage,
                    "blobs of passes 3 and 5");
    const Blob& good = at5[size_t(rank)];
    log.checkResult(scclEventCommImportState(ec, good.data(), good.size()), scclSuccess,
                    "the blobs of one save");
    passes(ec, x, rank, 5, 2, log);
    scclEventCommDestroy(ec);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
