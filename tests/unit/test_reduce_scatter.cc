// scclReduceScatter on in-process ranks (1-8): every data type against an independent reference
// of the rank-order reduction (tests/support/collective_reference.h) and bitwise against the
// matching slice of scclAllReduce (sum, average, max and min, NaN payloads included), in place
// and not;
// ranks that disagree all get scclInvalidUsage and the communicator stays usable.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "support/collective_reference.h"
#include "support/local_ranks.h"
#include "support/typed_values.h"

using sccl_test::RankLog;
using sccl_test::runLocalRanks;

namespace {

constexpr uint64_t kSeed = 0x5eed5ca77e7ull;

// Rank `rank`'s input: nranks blocks of recvcount elements, of the reference's values.
std::vector<std::byte> inputOf(scclDataType_t dtype, int rank, int nranks, size_t recvcount,
                               bool with_nans) {
  return sccl_test::makeInput(dtype, kSeed, rank, recvcount * size_t(nranks), with_nans);
}

std::vector<std::byte> block(const std::vector<std::byte>& all, int index, size_t bytes) {
  return std::vector<std::byte>(all.begin() + std::ptrdiff_t(size_t(index) * bytes),
                                all.begin() + std::ptrdiff_t(size_t(index + 1) * bytes));
}

struct OpCase {
  scclRedOp_t op;
  sccl_test::ReferenceOp reference;
  const char* name;
};
constexpr OpCase kSum{scclSum, sccl_test::ReferenceOp::Sum, "sum"};
constexpr OpCase kMax{scclMax, sccl_test::ReferenceOp::Max, "max"};
constexpr OpCase kMin{scclMin, sccl_test::ReferenceOp::Min, "min"};

const char* opName(scclRedOp_t op) {
  switch (op) {
    case scclSum: return "sum";
    case scclAvg: return "avg";
    case scclMax: return "max";
    case scclMin: return "min";
    default: return "?";
  }
}

void checkAgainstReference(int rank, int nranks, scclComm_t comm, RankLog& log,
                           scclDataType_t dtype, const OpCase& op, size_t recvcount, bool in_place,
                           bool with_nans) {
  const size_t element = sccl::dataTypeSize(dtype), bytes = recvcount * element;
  std::vector<std::byte> send = inputOf(dtype, rank, nranks, recvcount, with_nans);
  std::vector<std::byte> recv(bytes, std::byte{0x5a});
  void* out = in_place ? static_cast<void*>(send.data() + size_t(rank) * bytes) : recv.data();
  const std::string what = std::string("reduceScatter ") + op.name + " " +
                           sccl::dataTypeName(dtype) + " x " + std::to_string(recvcount) +
                           (in_place ? " in place" : "") + (with_nans ? " with NaN" : "");
  if (!log.checkResult(scclReduceScatter(send.data(), out, recvcount, dtype, op.op, comm, nullptr),
                       scclSuccess, what))
    return;
  const std::vector<std::byte> got(static_cast<std::byte*>(out),
                                   static_cast<std::byte*>(out) + bytes);
  const std::vector<std::byte> want =
      block(sccl_test::expectedReduction(dtype, op.reference, kSeed, nranks,
                                         recvcount * size_t(nranks), with_nans),
            rank, bytes);
  const long long wrong = sccl_test::firstMismatch(got, want, element);
  log.check(wrong < 0, what + ": element " + std::to_string(wrong) + " differs from the reference");
}

// The same input through scclAllReduce: this rank's block of its result, bit for bit.
void checkAgainstAllReduce(int rank, int nranks, scclComm_t comm, RankLog& log,
                           scclDataType_t dtype, scclRedOp_t op, size_t recvcount) {
  const size_t element = sccl::dataTypeSize(dtype), bytes = recvcount * element;
  const std::vector<std::byte> send = inputOf(dtype, rank, nranks, recvcount, true);
  std::vector<std::byte> reduced(send.size()), mine(bytes);
  const std::string what =
      std::string(opName(op)) + " " + sccl::dataTypeName(dtype) + " x " + std::to_string(recvcount);
  log.checkResult(scclAllReduce(send.data(), reduced.data(), recvcount * size_t(nranks), dtype, op,
                                comm, nullptr),
                  scclSuccess, "allReduce " + what);
  log.checkResult(scclReduceScatter(send.data(), mine.data(), recvcount, dtype, op, comm, nullptr),
                  scclSuccess, "reduceScatter " + what);
  const long long wrong = sccl_test::firstMismatch(mine, block(reduced, rank, bytes), element);
  log.check(wrong < 0,
            what + ": element " + std::to_string(wrong) + " differs from scclAllReduce's slice");
}

}  // namespace

TEST_CASE("scclReduceScatter: each rank's block of the rank-order reduction, every type",
          "[reduce_scatter][local]") {
  for (int nranks : {1, 2, 3, 4, 8}) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        for (scclDataType_t dtype : sccl_test::allDataTypes()) {
          const bool floating = sccl::isFloatingType(dtype);
          for (size_t recvcount : {size_t(0), size_t(1), size_t(7), size_t(1000)})
            checkAgainstReference(rank, nranks, comm, log, dtype, kSum, recvcount, false, floating);
          for (const OpCase& op : {kSum, kMax, kMin})
            checkAgainstReference(rank, nranks, comm, log, dtype, op, 333, true, floating);
          for (const OpCase& op : {kMax, kMin})
            checkAgainstReference(rank, nranks, comm, log, dtype, op, 1000, false, floating);
        }
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("scclReduceScatter is bitwise scclAllReduce's slice, sum, average, max and min",
          "[reduce_scatter][local]") {
  for (int nranks : {2, 3, 5}) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        for (scclDataType_t dtype : {scclFloat16, scclBfloat16, scclFloat32, scclFloat64}) {
          checkAgainstAllReduce(rank, nranks, comm, log, dtype, scclSum, 4097);
          checkAgainstAllReduce(rank, nranks, comm, log, dtype, scclAvg, 4097);
          checkAgainstAllReduce(rank, nranks, comm, log, dtype, scclMax, 4097);
          checkAgainstAllReduce(rank, nranks, comm, log, dtype, scclMin, 4097);
        }
        for (scclRedOp_t op : {scclSum, scclMax, scclMin})
          checkAgainstAllReduce(rank, nranks, comm, log, scclInt64, op, 100);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("scclReduceScatter: ranks that disagree all fail and the communicator stays usable",
          "[reduce_scatter][local][agreement]") {
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    std::vector<float> send(4 * 64, 1.0f), recv(64, 0.0f);
    // Rank 2 asks for 32 elements per rank where the others ask for 64.
    const size_t recvcount = rank == 2 ? 32 : 64;
    log.checkResult(
        scclReduceScatter(send.data(), recv.data(), recvcount, scclFloat32, scclSum, comm, nullptr),
        scclInvalidUsage, "mismatched recvcount");
    log.check(std::string(scclGetLastError(comm)).find("scclReduceScatter") != std::string::npos,
              std::string("the message names the call: ") + scclGetLastError(comm));
    // Rank 1 calls scclAllReduce while the others reduce-scatter.
    const scclResult_t other =
        rank == 1
            ? scclAllReduce(send.data(), send.data(), 64, scclFloat32, scclSum, comm, nullptr)
            : scclReduceScatter(send.data(), recv.data(), 64, scclFloat32, scclSum, comm, nullptr);
    log.checkResult(other, scclInvalidUsage, "reduceScatter against allReduce");
    log.checkResult(
        scclReduceScatter(send.data(), recv.data(), 64, scclFloat32, scclSum, comm, nullptr),
        scclSuccess, "the next agreed call");
    log.check(recv[0] == 4.0f && recv[63] == 4.0f, "the next call's result");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("scclReduceScatter refuses overlapping buffers that are not in place",
          "[reduce_scatter][local]") {
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    std::vector<float> send(2 * 16, 1.0f);
    // recvbuf inside sendbuf but not at this rank's block: refused before any agreement, so every
    // rank makes the same mistake here.
    float* wrong = send.data() + (rank == 0 ? 8 : 4);
    log.checkResult(scclReduceScatter(send.data(), wrong, 16, scclFloat32, scclSum, comm, nullptr),
                    scclInvalidArgument, "partial overlap");
    log.checkResult(scclReduceScatter(send.data(), send.data() + rank * 16, 16, scclFloat32,
                                      scclSum, comm, nullptr),
                    scclSuccess, "in place afterwards");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
