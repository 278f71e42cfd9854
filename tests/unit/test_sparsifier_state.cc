// Sparsifier checkpoints (scclSparsifierGetStateSize / ExportState / ImportState): a run saved
// after N calls and resumed by new communicators and sparsifiers gives, over the next M calls,
// outputs, residuals, shared state and statistics bitwise those of the uninterrupted run; a
// malformed blob is refused with its code on every rank and changes nothing; ranks that load
// checkpoints of different saves all get an error.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_test;

namespace {

using Blob = std::vector<unsigned char>;

constexpr size_t kHeader = 80;  // docs/api.md, "Checkpoints": the header's layout
constexpr size_t kSharedSizeAt = 56, kOwnSizeAt = 64;

uint64_t word64(const Blob& b, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

void resealChecksum(Blob& b) {
  const uint32_t crc =
      static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), b.data() + 16, b.size() - 16));
  std::memcpy(b.data() + 12, &crc, 4);
}

Blob exportBlob(scclSparsifier_t sp, RankLog& log) {
  size_t bytes = 0;
  if (!log.checkResult(scclSparsifierGetStateSize(sp, &bytes), scclSuccess, "GetStateSize"))
    return {};
  Blob blob(bytes);
  size_t written = 0;
  log.checkResult(scclSparsifierExportState(sp, blob.data(), blob.size(), &written), scclSuccess,
                  "ExportState");
  log.check(written == bytes, "ExportState wrote the size GetStateSize gave");
  return blob;
}

// What must be equal between the uninterrupted and the resumed run: the statistics but the times.
std::vector<double> statsWithoutTimes(scclSparsifier_t sp) {
  scclSparseStats_t s{};
  s.size = sizeof(s);
  scclSparsifierGetStats(sp, &s);
  return {double(s.iteration),
          double(s.kTarget),
          double(s.kLocal),
          double(s.kGlobal),
          double(s.kMax),
          s.density,
          s.densityError,
          s.gatherInflation,
          double(s.bytesSent),
          double(s.bytesReceived),
          s.threshold,
          s.residualNorm,
          double(s.nonFinite),
          double(s.totalBytesSent),
          double(s.totalBytesReceived),
          s.meanAbsDensityError};
}

bool bitwiseEqual(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

struct ResumeRecord {
  std::vector<std::vector<float>> outputs;  // [call after the save]
  Blob final_blob;
  std::vector<double> final_stats;
};

// Runs `calls` calls from call `first` on, with the gradient of (rank, call, index).
void runCalls(scclSparsifier_t sp, scclComm_t comm, int rank, size_t count, uint64_t first,
              int calls, RankLog& log, ResumeRecord* record) {
  std::vector<float> grad(count), out(count);
  for (int c = 0; c < calls; ++c) {
    const uint64_t t = first + uint64_t(c);
    for (size_t i = 0; i < count; ++i) grad[i] = gradientValue(17, rank, t, i);
    // A few non-finite-free large spikes keep the selection moving between calls.
    grad[(t * 131) % count] = 0.5f * float(rank + 1);
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum, sp,
                                        comm, nullptr),
                    scclSuccess, "call " + std::to_string(t));
    if (record != nullptr) record->outputs.push_back(out);
  }
}

using Prepare = std::function<void(scclSparsifier_t)>;

// The uninterrupted run of before + after calls (blobs saved after `before`), and the resumed
// run: new communicators and sparsifiers that load those blobs and make the `after` calls.
void checkResume(const scclSparseConfig_t& config, int nranks, size_t count, int before, int after,
                 const Prepare& prepare = nullptr) {
  std::vector<Blob> saved(static_cast<size_t>(nranks));
  std::vector<ResumeRecord> whole(static_cast<size_t>(nranks)),
      resumed(static_cast<size_t>(nranks));
  auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    if (prepare) prepare(sp);
    runCalls(sp, comm, rank, count, 0, before, log, nullptr);
    saved[size_t(rank)] = exportBlob(sp, log);
    runCalls(sp, comm, rank, count, uint64_t(before), after, log, &whole[size_t(rank)]);
    whole[size_t(rank)].final_blob = exportBlob(sp, log);
    whole[size_t(rank)].final_stats = statsWithoutTimes(sp);
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    const Blob& blob = saved[size_t(rank)];
    if (!log.checkResult(scclSparsifierImportState(sp, blob.data(), blob.size()), scclSuccess,
                         "ImportState"))
      return;
    runCalls(sp, comm, rank, count, uint64_t(before), after, log, &resumed[size_t(rank)]);
    resumed[size_t(rank)].final_blob = exportBlob(sp, log);
    resumed[size_t(rank)].final_stats = statsWithoutTimes(sp);
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  for (int r = 0; r < nranks; ++r) {
    INFO("rank " << r);
    const ResumeRecord& a = whole[size_t(r)];
    const ResumeRecord& b = resumed[size_t(r)];
    REQUIRE(a.outputs.size() == b.outputs.size());
    for (size_t c = 0; c < a.outputs.size(); ++c) {
      INFO("call " << before + int(c));
      REQUIRE(std::memcmp(a.outputs[c].data(), b.outputs[c].data(), count * sizeof(float)) == 0);
    }
    REQUIRE(bitwiseEqual(a.final_stats, b.final_stats));
    // Shared section and residual bitwise; the own section holds the times, which differ.
    const Blob& x = a.final_blob;
    const Blob& y = b.final_blob;
    REQUIRE(x.size() == y.size());
    const size_t shared = word64(x, kSharedSizeAt), own = word64(x, kOwnSizeAt);
    REQUIRE(std::memcmp(x.data() + kHeader, y.data() + kHeader, shared) == 0);
    const size_t residual_at = kHeader + shared + own;
    REQUIRE(std::memcmp(x.data() + residual_at, y.data() + residual_at, x.size() - residual_at) ==
            0);
  }
}

}  // namespace

TEST_CASE("checkpoint: every preset resumes bit for bit at 4 ranks", "[checkpoint]") {
  for (const char* preset : {"micro", "exdyna", "sidco", "s2", "micro_sync_free",
                             "exdyna_sync_free", "topk", "cltk", "hard_threshold", "dense"}) {
    SECTION(preset) {
      checkResume(sparseConfig(preset, 0.01), 4, 20011, 7, 9);
    }
  }
}

TEST_CASE("checkpoint: resumes through a density warm-up, a set density and other estimators",
          "[checkpoint]") {
  SECTION("micro, warm-up from 0.1 over 12 calls, saved at call 5") {
    auto config = sparseConfig("micro", 0.01);
    config.densityWarmupStart = 0.1;
    config.densityWarmupCalls = 12;
    checkResume(config, 3, 12007, 5, 10);
  }
  SECTION("exdyna after scclSparsifierSetDensity") {
    checkResume(sparseConfig("exdyna", 0.01), 4, 16384, 4, 6,
                [](scclSparsifier_t sp) { scclSparsifierSetDensity(sp, 0.02); });
  }
  for (const char* estimator : {"sidco_gp", "sidco_gamma_gp", "redsync", "gaussiank", "dgc"}) {
    SECTION(std::string("whole vector, estimator ") + estimator) {
      auto config = sparseConfig("sidco", 0.01);
      config.estimator = estimator;
      checkResume(config, 2, 10007, 6, 6);
    }
  }
  SECTION("one rank") {
    checkResume(sparseConfig("micro", 0.001), 1, 30011, 5, 5);
  }
}

namespace {

// A blob saved by a 2-rank micro sparsifier after 6 calls, for rank 0 and rank 1.
struct SavedPair {
  std::vector<Blob> blobs;
  scclSparseConfig_t config = sparseConfig("exdyna", 0.01);
  size_t count = 8192;
};

SavedPair savePair(const scclSparseConfig_t& config, size_t count, int calls) {
  SavedPair pair;
  pair.config = config;
  pair.count = count;
  pair.blobs.resize(2);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    runCalls(sp, comm, rank, count, 0, calls, log, nullptr);
    pair.blobs[size_t(rank)] = exportBlob(sp, log);
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
  return pair;
}

struct Malformed {
  std::string name;
  std::function<void(Blob&)> damage;
};

void patch32(Blob& b, size_t at, uint32_t v) {
  std::memcpy(b.data() + at, &v, 4);
}
void patch64(Blob& b, size_t at, uint64_t v) {
  std::memcpy(b.data() + at, &v, 8);
}

// Damage with the checksum recomputed, so that the field's own check must refuse it.
std::function<void(Blob&)> sealed(std::function<void(Blob&)> damage) {
  return [damage](Blob& b) {
    damage(b);
    resealChecksum(b);
  };
}

std::vector<Malformed> malformedBlobs(const Blob& good) {
  std::vector<Malformed> cases;
  // Truncated at every header field and inside every section.
  const size_t shared = word64(good, kSharedSizeAt), own = word64(good, kOwnSizeAt);
  for (size_t at : {size_t(0),
                    size_t(7),
                    size_t(8),
                    size_t(12),
                    size_t(16),
                    size_t(24),
                    size_t(28),
                    size_t(32),
                    size_t(40),
                    size_t(44),
                    size_t(48),
                    size_t(56),
                    size_t(64),
                    size_t(72),
                    size_t(79),
                    kHeader,
                    kHeader + shared / 2,
                    kHeader + shared,
                    kHeader + shared + own / 2,
                    kHeader + shared + own,
                    good.size() - 1}) {
    cases.push_back({"truncated at byte " + std::to_string(at), [at](Blob& b) { b.resize(at); }});
  }
  cases.push_back({"one byte appended", [](Blob& b) { b.push_back(0); }});
  // Flipped bits: the checksum catches each.
  for (size_t at : {size_t(0), size_t(9), size_t(13), size_t(30), kHeader + 3, kHeader + shared + 5,
                    good.size() - 2}) {
    cases.push_back(
        {"bit flipped at byte " + std::to_string(at), [at](Blob& b) { b[at] ^= 0x10; }});
  }
  // Fields changed with a valid checksum.
  cases.push_back({"magic", sealed([](Blob& b) { b[3] ^= 1; })});
  cases.push_back({"version 2", sealed([](Blob& b) { patch32(b, 8, 2); })});
  cases.push_back({"total size", sealed([](Blob& b) { patch64(b, 16, b.size() + 8); })});
  cases.push_back({"rank", sealed([](Blob& b) { patch32(b, 24, 1 - b[24]); })});
  cases.push_back({"rank count 3", sealed([](Blob& b) { patch32(b, 28, 3); })});
  cases.push_back({"count", sealed([](Blob& b) { patch64(b, 32, word64(b, 32) + 1); })});
  cases.push_back({"dtype float16", sealed([](Blob& b) { patch32(b, 40, scclFloat16); })});
  cases.push_back({"residual dtype float64", sealed([](Blob& b) { patch32(b, 44, scclFloat64); })});
  cases.push_back({"configuration", sealed([](Blob& b) { b[50] ^= 0x40; })});
  cases.push_back({"shared section size", sealed([](Blob& b) {
                     patch64(b, kSharedSizeAt, word64(b, kSharedSizeAt) + 8);
                     patch64(b, kOwnSizeAt, word64(b, kOwnSizeAt) - 8);
                   })});
  cases.push_back({"section sizes past the end",
                   sealed([](Blob& b) { patch64(b, kSharedSizeAt, ~uint64_t(0) - 4); })});
  cases.push_back({"residual size", sealed([](Blob& b) { patch64(b, 72, word64(b, 72) - 4); })});
  // Inside the shared section (micro/exdyna layout of docs/api.md): preset name length, the
  // density, the flush flag, a rank count above the count, the threshold.
  cases.push_back({"preset name length", sealed([](Blob& b) { patch32(b, kHeader, 1u << 30); })});
  cases.push_back({"preset name", sealed([](Blob& b) { b[kHeader + 4] = 'X'; })});
  const size_t name = 4 + good[kHeader];  // the preset name's length byte (names are short)
  const size_t call_at = kHeader + name, density_at = call_at + 8;
  cases.push_back(
      {"call number 2^63", sealed([call_at](Blob& b) { patch64(b, call_at, uint64_t{1} << 63); })});
  cases.push_back({"density NaN", sealed([density_at](Blob& b) {
                     const double nan = std::nan("");
                     std::memcpy(b.data() + density_at, &nan, 8);
                   })});
  cases.push_back({"density 2 without warm-up", sealed([density_at](Blob& b) {
                     const double two = 2.0;
                     std::memcpy(b.data() + density_at, &two, 8);
                   })});
  // density, warm-up calls, start, form (4 + 0 bytes of "exponential": 4 + 11), then the flag.
  const size_t flag_at = density_at + 8 + 8 + 8 + 4 + 11;
  cases.push_back({"flush flag 2", sealed([flag_at](Blob& b) { b[flag_at] = 2; })});
  const size_t first_count_at = flag_at + 1 + 8;
  cases.push_back({"rank count above the count", sealed([first_count_at](Blob& b) {
                     patch64(b, first_count_at, ~uint64_t(0));
                   })});
  // The scaling threshold follows the two counts, the switch count and the settled flag.
  const size_t threshold_at = first_count_at + 2 * 8 + 8 + 1;
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    cases.push_back(
        {"scaling threshold " + std::to_string(bad),
         sealed([threshold_at, bad](Blob& b) { std::memcpy(b.data() + threshold_at, &bad, 8); })});
  }
  // ExDyna's partitions: a partition count, then the blocks of each.
  const size_t partitions_at = threshold_at + 8;
  cases.push_back({"exdyna partition count",
                   sealed([partitions_at](Blob& b) { patch64(b, partitions_at, 3); })});
  cases.push_back({"exdyna blocks beyond the layout", sealed([partitions_at](Blob& b) {
                     patch64(b, partitions_at + 8, word64(b, partitions_at + 8) + 1);
                   })});
  cases.push_back({"exdyna negative blocks", sealed([partitions_at](Blob& b) {
                     patch64(b, partitions_at + 8, ~uint64_t(0));
                   })});
  cases.push_back(
      {"statistics size", sealed([shared](Blob& b) { patch64(b, kHeader + shared, 8); })});
  return cases;
}

}  // namespace

TEST_CASE("checkpoint: malformed blobs are refused on every rank and change nothing",
          "[checkpoint][hostile]") {
  const SavedPair pair = savePair(sparseConfig("exdyna", 0.01), 8192, 6);
  const std::vector<Malformed> cases = malformedBlobs(pair.blobs[1]);
  REQUIRE(cases.size() >= 20);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, pair.count, scclFloat32, &pair.config),
                         scclSuccess, "create"))
      return;
    runCalls(sp, comm, rank, pair.count, 0, 2, log, nullptr);
    const Blob before = exportBlob(sp, log);
    for (const Malformed& m : cases) {
      Blob blob = pair.blobs[size_t(rank)];
      if (rank == 1) m.damage(blob);  // rank 0 loads a good blob, rank 1 the damaged one
      const scclResult_t got = scclSparsifierImportState(sp, blob.data(), blob.size());
      const scclResult_t want = rank == 1 ? scclInvalidArgument : scclInvalidUsage;
      log.checkResult(got, want, m.name);
      log.check(std::string(scclGetLastError(comm)).find("checkpoint") != std::string::npos,
                m.name + ": the error text names the checkpoint: " + scclGetLastError(comm));
      Blob after = exportBlob(sp, log);
      log.check(
          after.size() == before.size() &&
              std::memcmp(after.data() + kHeader, before.data() + kHeader,
                          word64(before, kSharedSizeAt)) == 0 &&
              std::memcmp(after.data() + after.size() - pair.count * 4,
                          before.data() + before.size() - pair.count * 4, pair.count * 4) == 0,
          m.name + ": the sparsifier changed");
    }
    // Still usable: a good pair loads, and the next call succeeds.
    const Blob& good = pair.blobs[size_t(rank)];
    log.checkResult(scclSparsifierImportState(sp, good.data(), good.size()), scclSuccess,
                    "a good blob after the bad ones");
    runCalls(sp, comm, rank, pair.count, 6, 1, log, nullptr);
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("checkpoint: ranks that load different saves all get an error", "[checkpoint]") {
  const SavedPair early = savePair(sparseConfig("micro", 0.01), 8192, 3);
  const SavedPair late = savePair(sparseConfig("micro", 0.01), 8192, 5);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, 8192, scclFloat32, &early.config),
                         scclSuccess, "create"))
      return;
    const Blob& blob = rank == 0 ? early.blobs[0] : late.blobs[1];
    log.checkResult(scclSparsifierImportState(sp, blob.data(), blob.size()), scclInvalidUsage,
                    "blobs of calls 3 and 5");
    log.check(std::string(scclGetLastError(comm)).find("not of one save") != std::string::npos,
              std::string("the text says why: ") + scclGetLastError(comm));
    scclSparseStats_t s{};
    s.size = sizeof(s);
    scclSparsifierGetStats(sp, &s);
    log.check(s.iteration == 0, "nothing was loaded");
    // Loading the other rank's blob is refused locally (rank), on both ranks.
    const Blob& other = early.blobs[size_t(1 - rank)];
    log.checkResult(scclSparsifierImportState(sp, other.data(), other.size()), scclInvalidArgument,
                    "another rank's blob");
    const Blob& mine = early.blobs[size_t(rank)];
    log.checkResult(scclSparsifierImportState(sp, mine.data(), mine.size()), scclSuccess,
                    "the same save on both ranks");
    scclSparsifierGetStats(sp, &s);
    log.check(s.iteration == 3, "call number 3 loaded");
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("checkpoint: another configuration, an empty or short buffer are refused",
          "[checkpoint]") {
  const SavedPair pair = savePair(sparseConfig("micro", 0.01), 8192, 2);
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    auto other = sparseConfig("micro", 0.01);
    other.scalingBand = 1.2;
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, 8192, scclFloat32, &other), scclSuccess,
                         "create"))
      return;
    const Blob& blob = pair.blobs[size_t(rank)];
    log.checkResult(scclSparsifierImportState(sp, blob.data(), blob.size()), scclInvalidArgument,
                    "another config");
    log.check(std::string(scclGetLastError(comm)).find("configuration") != std::string::npos,
              std::string("the text names the configuration: ") + scclGetLastError(comm));
    log.checkResult(scclSparsifierImportState(sp, nullptr, 0), scclInvalidArgument, "empty");
    size_t bytes = 0;
    log.checkResult(scclSparsifierGetStateSize(sp, &bytes), scclSuccess, "size");
    Blob small(bytes - 1);
    log.checkResult(scclSparsifierExportState(sp, small.data(), small.size(), nullptr),
                    scclInvalidArgument, "a buffer one byte short");
    log.checkResult(scclSparsifierExportState(sp, nullptr, bytes, nullptr), scclInvalidArgument,
                    "NULL buffer");
    log.checkResult(scclSparsifierGetStateSize(sp, nullptr), scclInvalidArgument, "NULL size");
    log.checkResult(scclSparsifierGetStateSize(nullptr, &bytes), scclInvalidArgument,
                    "NULL sparsifier");
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
