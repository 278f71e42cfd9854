// Communicators over the in-process transport with 1, 2, 3, 4, 8 and 64 ranks: every collective,
// every data type, exact expected values computed by each rank from (seed, rank, index).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "support/local_ranks.h"
#include "support/typed_values.h"

using sccl_test::loadValue;
using sccl_test::RankLog;
using sccl_test::runLocalRanks;
using sccl_test::storeValue;
using sccl_test::testValue;

namespace {

// Unsigned types hold values mod 2^bits; use non-negative values for them so sums are exact.
int valueFor(scclDataType_t dtype, uint32_t seed, int rank, size_t i) {
  int v = testValue(seed, rank, i);
  bool is_unsigned = dtype == scclUint8 || dtype == scclUint32 || dtype == scclUint64;
  bool is_small = dtype == scclInt8 || dtype == scclUint8;
  if (is_unsigned) v = v + 15;  // 0..30
  if (is_small) v = v % 4;      // sums of 64 ranks stay inside int8/uint8
  return v;
}

void checkAllReduceSum(int rank, int nranks, scclComm_t comm, RankLog& log, scclDataType_t dtype,
                       size_t count, bool in_place) {
  size_t element = sccl::dataTypeSize(dtype);
  std::vector<unsigned char> send(count * element + 1), recv(count * element + 1);
  for (size_t i = 0; i < count; ++i) storeValue(dtype, send.data(), i, valueFor(dtype, 7, rank, i));
  void* out = in_place ? send.data() : recv.data();
  log.checkResult(scclAllReduce(send.data(), out, count, dtype, scclSum, comm, nullptr),
                  scclSuccess, std::string("allreduce ") + sccl::dataTypeName(dtype));
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double expected = 0;
    for (int r = 0; r < nranks; ++r) expected += valueFor(dtype, 7, r, i);
    if (loadValue(dtype, out, i) != expected) ++wrong;
  }
  log.check(wrong == 0, std::to_string(wrong) + " wrong elements in " + sccl::dataTypeName(dtype) +
                            " allreduce of " + std::to_string(count) +
                            (in_place ? " (in place)" : ""));
}

void checkAllGatherAndBroadcast(int rank, int nranks, scclComm_t comm, RankLog& log, size_t count) {
  std::vector<int32_t> mine(count), all(count * nranks, -999);
  for (size_t i = 0; i < count; ++i) mine[i] = testValue(3, rank, i);
  log.checkResult(scclAllGather(mine.data(), all.data(), count, scclInt32, comm, nullptr),
                  scclSuccess, "allgather");
  size_t wrong = 0;
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i) wrong += all[r * count + i] != testValue(3, r, i);
  log.check(wrong == 0, std::to_string(wrong) + " wrong allgather elements");
  for (int root = 0; root < nranks; ++root) {
    std::vector<double> buf(count, rank == root ? 0.0 : -1.0);
    for (size_t i = 0; i < count && rank == root; ++i) buf[i] = testValue(5, root, i);
    log.checkResult(scclBroadcast(buf.data(), buf.data(), count, scclFloat64, root, comm, nullptr),
                    scclSuccess, "broadcast");
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad += buf[i] != testValue(5, root, i);
    log.check(bad == 0, "broadcast from root " + std::to_string(root) + ": " + std::to_string(bad) +
                            " wrong");
  }
}

}  // namespace

TEST_CASE("local communicators: every collective and data type with exact results",
          "[local][comm]") {
  for (int nranks : {1, 2, 3, 4, 8}) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        int count = 0, me = -1;
        const char* transport = nullptr;
        scclCommCount(comm, &count);
        scclCommUserRank(comm, &me);
        scclCommTransportName(comm, &transport);
        log.check(count == nranks && me == rank, "count/rank queries");
        log.check(transport != nullptr && std::string(transport) == "local", "transport name");
        for (scclDataType_t dtype : sccl_test::allDataTypes()) {
          for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(4099)}) {
            checkAllReduceSum(rank, nranks, comm, log, dtype, n, false);
          }
          checkAllReduceSum(rank, nranks, comm, log, dtype, 1001, true);
        }
        checkAllGatherAndBroadcast(rank, nranks, comm, log, 17);
        log.checkResult(scclBarrier(comm), scclSuccess, "barrier");
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("local communicators: 64 ranks simulate a large job", "[local][comm]") {
  auto failures = runLocalRanks(64, [&](int rank, scclComm_t comm, RankLog& log) {
    checkAllReduceSum(rank, 64, comm, log, scclFloat32, 10000, false);
    checkAllReduceSum(rank, 64, comm, log, scclFloat16, 333, true);
    checkAllGatherAndBroadcast(rank, 64, comm, log, 5);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("local communicators: average divides the rank-order sum", "[local][comm]") {
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    std::vector<float> x(100), y(100);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(testValue(11, rank, i));
    log.checkResult(
        scclAllReduce(x.data(), y.data(), x.size(), scclFloat32, scclAvg, comm, nullptr),
        scclSuccess, "avg");
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      float sum = 0;
      for (int r = 0; r < 4; ++r) sum += float(testValue(11, r, i));
      wrong += y[i] != sum / 4.0f;
    }
    log.check(wrong == 0, std::to_string(wrong) + " wrong averages");
    log.checkResult(scclAllReduce(x.data(), y.data(), 1, scclInt32, scclAvg, comm, nullptr),
                    scclInvalidArgument, "avg of int32");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("local communicators: identical results on every rank and every run", "[local][comm]") {
  // Values whose sums round: the result must still be bitwise the same on every rank and run.
  std::vector<std::vector<float>> results(3);
  for (int run = 0; run < 3; ++run) {
    std::vector<std::vector<float>> per_rank(5);
    auto failures = runLocalRanks(5, [&](int rank, scclComm_t comm, RankLog& log) {
      std::vector<float> x(2049);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = 0.1f * float(rank + 1) + 1e-7f * float(i) + 1e7f * float(i % 3);
      per_rank[rank].resize(x.size());
      log.checkResult(scclAllReduce(x.data(), per_rank[rank].data(), x.size(), scclFloat32, scclSum,
                                    comm, nullptr),
                      scclSuccess, "allreduce");
    });
    REQUIRE_NO_RANK_FAILURES(failures);
    for (int r = 1; r < 5; ++r)
      REQUIRE(std::memcmp(per_rank[r].data(), per_rank[0].data(), 2049 * 4) == 0);
    results[run] = per_rank[0];
  }
  REQUIRE(std::memcmp(results[1].data(), results[0].data(), 2049 * 4) == 0);
  REQUIRE(std::memcmp(results[2].data(), results[0].data(), 2049 * 4) == 0);
}
