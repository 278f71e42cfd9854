// What the stream-ordered sync_free call (config streamOrdered; algorithms/resident_sync_free.cc)
// shares with the host, beside the fake-device runs of test_resident_sync_free.cc:
// the slot-header checks its kernel runs (kernels/shared/sync_free_slot_check.h, the host
// reduction's own function), the encoding of its sticky fault word, the config key and the configs
// it accepts, scclSparsifierGetAsyncError on host sparsifiers, and that the flag does not change a
// host run. The device path itself is tests/gpu/test_gpu_stream_ordered.cc.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/shared/sync_free_async_fault.h"
#include "kernels/shared/sync_free_slot_check.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_test;
using sccl::SlotFault;

namespace {

constexpr uint64_t kFingerprint = 0x1234abcdull, kCall = 7, kCapacity = 5;

// Three ranks' slots of kCapacity entries; ranges [0,10), [10,13), [13,30).
struct Slots {
  std::vector<int64_t> words;
  std::vector<uint64_t> ranges{0, 10, 10, 13, 13, 30};
  Slots() : words(3 * (sccl::kSlotHeaderWords + kCapacity), -1) {
    for (int r = 0; r < 3; ++r) set(r, 2, 0, kFingerprint, kCall);
  }
  void set(int r, int64_t k, int64_t nonfinite, uint64_t fingerprint, uint64_t call) {
    int64_t* h = words.data() + size_t(r) * (sccl::kSlotHeaderWords + kCapacity);
    h[0] = k;
    h[1] = nonfinite;
    h[2] = int64_t(fingerprint);
    h[3] = int64_t(call);
  }
  sccl::SlotHeaderVerdict check() const {
    return sccl::checkSlotHeaderWords(words.data(), sccl::kSlotHeaderWords + kCapacity, 3,
                                      kCapacity, kFingerprint, kCall, ranges.data());
  }
};

}  // namespace

TEST_CASE("slot header check names the first rank at fault", "[stream_ordered]") {
  Slots slots;
  CHECK(slots.check().fault == SlotFault::None);
  CHECK(slots.check().first_nonfinite_rank == -1);

  slots.set(2, 2, 0, kFingerprint + 1, kCall);  // another config
  CHECK(slots.check().fault == SlotFault::OtherCall);
  CHECK(slots.check().rank == 2);
  slots.set(1, 2, 0, kFingerprint, kCall + 1);  // another call, and before rank 2
  CHECK(slots.check().fault == SlotFault::OtherCall);
  CHECK(slots.check().rank == 1);

  Slots counts;
  counts.set(1, 4, 0, kFingerprint, kCall);  // rank 1's range holds 3 entries
  CHECK(counts.check().fault == SlotFault::CountAboveCapacity);
  CHECK(counts.check().rank == 1);
  counts.set(1, 3, 0, kFingerprint, kCall);
  counts.set(2, int64_t(kCapacity) + 1, 0, kFingerprint, kCall);  // above the capacity
  CHECK(counts.check().fault == SlotFault::CountAboveCapacity);
  CHECK(counts.check().rank == 2);
  counts.set(2, -1, 0, kFingerprint, kCall);  // a negative count reads as huge
  CHECK(counts.check().fault == SlotFault::CountAboveCapacity);

  Slots nonfinite;
  nonfinite.set(2, 1, 4, kFingerprint, kCall);
  nonfinite.set(1, 1, 1, kFingerprint, kCall);
  CHECK(nonfinite.check().fault == SlotFault::None);
  CHECK(nonfinite.check().first_nonfinite_rank == 1);
}

TEST_CASE("async fault word round trips kind rank and call", "[stream_ordered]") {
  using sccl::AsyncFault;
  for (AsyncFault fault : {AsyncFault::OtherCall, AsyncFault::CountAboveCapacity,
                           AsyncFault::IndexOutOfRange, AsyncFault::NonFinite}) {
    for (int rank : {-1, 0, 5, 1023}) {
      const uint64_t word = sccl::encodeAsyncFault(fault, rank, 0x1'0000'0005ull);
      CHECK(word != 0);  // 0 means "no fault"
      CHECK(sccl::asyncFaultKind(word) == fault);
      CHECK(sccl::asyncFaultRank(word) == rank);
      CHECK(sccl::asyncFaultCall(word) == 5u);
    }
  }
}

TEST_CASE("stream ordered config key parses and needs a sync free preset", "[stream_ordered]") {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  CHECK(config.streamOrdered == 0);
  REQUIRE(scclSparseConfigFromJson(R"({"algorithm": "micro_sync_free", "stream_ordered": true})",
                                   &config) == scclSuccess);
  CHECK(config.streamOrdered == 1);
  CHECK(scclSparseConfigFromJson(R"({"stream_ordered": 2})", &config) == scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("stream_ordered") != std::string::npos);
  CHECK(config.streamOrdered == 1);  // untouched by the failed parse

  auto failures = runLocalRanks(2, [&](int, scclComm_t comm, RankLog& log) {
    for (const char* algorithm : {"topk", "micro", "exdyna", "s2"}) {
      scclSparseConfig_t other = sparseConfig(algorithm, 0.01);
      other.streamOrdered = 1;
      scclSparsifier_t sp = nullptr;
      log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &other),
                      scclInvalidArgument, std::string("streamOrdered with ") + algorithm);
      const std::string text = scclGetLastError(comm);
      log.check(text.find("streamOrdered") != std::string::npos &&
                    text.find("exdyna_sync_free") != std::string::npos,
                "the refusal names the flag and the preset: " + text);
    }
    scclSparseConfig_t sidco = sparseConfig("micro_sync_free", 0.01);
    sidco.estimator = "sidco_exp";
    sidco.streamOrdered = 1;
    scclSparsifier_t sp = nullptr;
    log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &sidco), scclInvalidArgument,
                    "streamOrdered with a data-fitting estimator");
    scclSparseConfig_t flag = sparseConfig("micro_sync_free", 0.01);
    flag.streamOrdered = 2;
    log.checkResult(scclSparsifierCreate(&sp, comm, 1000, scclFloat32, &flag), scclInvalidArgument,
                    "streamOrdered 2");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("stream ordered flag leaves a host run bit for bit the same", "[stream_ordered]") {
  const size_t count = 20011;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    return gradientValue(31, r, t, i) * (i < 3000 ? 8.0f : 1.0f);  // uneven: ExDyna rebalances
  };
  for (const char* preset : {"micro_sync_free", "exdyna_sync_free"}) {
    scclSparseConfig_t plain = sparseConfig(preset, 0.01);
    scclSparseConfig_t ordered = plain;
    ordered.streamOrdered = 1;
    SparseRun a = runSparse(3, count, plain, 5, gradient);
    SparseRun b = runSparse(3, count, ordered, 5, gradient);
    REQUIRE_NO_RANK_FAILURES(a.failures);
    REQUIRE_NO_RANK_FAILURES(b.failures);
    for (size_t t = 0; t < 5; ++t) {
      for (size_t r = 0; r < 3; ++r) {
        INFO(preset << " call " << t << " rank " << r);
        CHECK(std::memcmp(a.calls[t][r].output.data(), b.calls[t][r].output.data(), count * 4) ==
              0);
        CHECK(std::memcmp(a.calls[t][r].residual.data(), b.calls[t][r].residual.data(),
                          count * 4) == 0);
        CHECK(a.calls[t][r].stats.kGlobal == b.calls[t][r].stats.kGlobal);
      }
    }
  }
}

TEST_CASE("sparsifier async error is success on host sparsifiers and checks its arguments",
          "[stream_ordered]") {
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparseConfig_t config = sparseConfig("micro_sync_free", 0.01);
    config.streamOrdered = 1;
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, 4096, scclFloat32, &config), scclSuccess,
                         "create"))
      return;
    scclResult_t async = scclInternalError;
    log.checkResult(scclSparsifierGetAsyncError(sp, &async), scclSuccess, "query before a call");
    log.checkResult(async, scclSuccess, "no fault before a call");
    std::vector<float> grad(4096), out(4096);
    for (size_t i = 0; i < grad.size(); ++i) grad[i] = gradientValue(5, rank, 0, i);
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), grad.size(), scclFloat32, scclSum,
                                        sp, comm, nullptr),
                    scclSuccess, "host call");
    async = scclInternalError;
    log.checkResult(scclSparsifierGetAsyncError(sp, &async), scclSuccess, "query after a call");
    log.checkResult(async, scclSuccess, "no fault after a host call");
    log.checkResult(scclSparsifierGetAsyncError(sp, nullptr), scclInvalidArgument, "NULL result");
    log.checkResult(scclSparsifierGetAsyncError(nullptr, &async), scclInvalidArgument,
                    "NULL sparsifier");
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "destroy");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
