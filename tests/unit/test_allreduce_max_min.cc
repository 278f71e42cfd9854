// scclAllReduce with scclMax and scclMin on in-process ranks (1-8): every data type against an
// independent reference of the rank-order reduction (tests/support/collective_reference.h), NaN
// payloads and signed/unsigned integer orders included, in place and not; the sparse all-reduce
// refuses both ops with scclInvalidArgument on every rank and stays usable.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "support/collective_reference.h"
#include "support/local_ranks.h"
#include "support/typed_values.h"

using sccl_test::RankLog;
using sccl_test::runLocalRanks;

namespace {

constexpr uint64_t kSeed = 0x3a11ed3c;

void checkMaxMin(int rank, int nranks, scclComm_t comm, RankLog& log, scclDataType_t dtype,
                 scclRedOp_t op, size_t count, bool in_place) {
  const size_t element = sccl::dataTypeSize(dtype);
  const bool with_nans = sccl::isFloatingType(dtype);
  std::vector<std::byte> send = sccl_test::makeInput(dtype, kSeed, rank, count, with_nans);
  std::vector<std::byte> recv(send.size(), std::byte{0x5a});
  void* out = in_place ? static_cast<void*>(send.data()) : recv.data();
  const std::string what = std::string(op == scclMax ? "max " : "min ") +
                           sccl::dataTypeName(dtype) + " x " + std::to_string(count) +
                           (in_place ? " in place" : "");
  if (!log.checkResult(scclAllReduce(send.data(), out, count, dtype, op, comm, nullptr),
                       scclSuccess, what))
    return;
  const std::vector<std::byte> got(static_cast<std::byte*>(out),
                                   static_cast<std::byte*>(out) + count * element);
  const auto reference = op == scclMax ? sccl_test::ReferenceOp::Max : sccl_test::ReferenceOp::Min;
  const long long wrong = sccl_test::firstMismatch(
      got, sccl_test::expectedReduction(dtype, reference, kSeed, nranks, count, with_nans),
      element);
  log.check(wrong < 0, what + ": element " + std::to_string(wrong) + " differs from the reference");
}

}  // namespace

TEST_CASE("scclAllReduce scclMax and scclMin: the rank-order reduction, every type",
          "[allreduce][local][max_min]") {
  for (int nranks : {1, 2, 3, 4, 8}) {
    DYNAMIC_SECTION("nranks " << nranks) {
      auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
        for (scclDataType_t dtype : sccl_test::allDataTypes())
          for (scclRedOp_t op : {scclMax, scclMin}) {
            checkMaxMin(rank, nranks, comm, log, dtype, op, 2001, false);
            checkMaxMin(rank, nranks, comm, log, dtype, op, 17, true);
          }
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("scclMax and scclMin: signed zeros keep rank 0's operand, NaN wins, integers by sign",
          "[allreduce][local][max_min]") {
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    // Rank 0 holds -0 and rank 1 +0 at element 0: the earlier rank's bits stay on a tie.
    const float nan_with_payload = [] {
      uint32_t bits = 0x7fc12345u;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }();
    std::vector<float> x{rank == 0 ? -0.0f : 0.0f, rank == 0 ? 1.0f : nan_with_payload,
                         rank == 0 ? -3.0f : 2.0f};
    for (scclRedOp_t op : {scclMax, scclMin}) {
      std::vector<float> y(3);
      log.checkResult(scclAllReduce(x.data(), y.data(), 3, scclFloat32, op, comm, nullptr),
                      scclSuccess, "float max/min");
      uint32_t zero_bits = 0, nan_bits = 0;
      std::memcpy(&zero_bits, &y[0], 4);
      std::memcpy(&nan_bits, &y[1], 4);
      log.check(zero_bits == 0x80000000u, "a tie of -0 and +0 keeps rank 0's -0");
      log.check(nan_bits == 0x7fc00000u, "a NaN operand gives the canonical NaN");
      log.check(y[2] == (op == scclMax ? 2.0f : -3.0f), "max/min of -3 and 2");
    }
    std::vector<int32_t> s{rank == 0 ? -5 : 4};
    std::vector<uint32_t> u{rank == 0 ? 0xfffffffbu : 4u};
    int32_t smax = 0;
    uint32_t umax = 0;
    log.checkResult(scclAllReduce(s.data(), &smax, 1, scclInt32, scclMax, comm, nullptr),
                    scclSuccess, "int32 max");
    log.checkResult(scclAllReduce(u.data(), &umax, 1, scclUint32, scclMax, comm, nullptr),
                    scclSuccess, "uint32 max");
    log.check(smax == 4 && umax == 0xfffffffbu, "signed and unsigned orders");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("scclSparseAllreduce refuses scclMax and scclMin on every rank and stays usable",
          "[allreduce][local][max_min][sparse]") {
  auto failures = runLocalRanks(3, [&](int rank, scclComm_t comm, RankLog& log) {
    const size_t count = 4096;
    scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
    config.algorithm = "micro";
    config.density = 0.01;
    scclSparsifier_t sparsifier = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sparsifier, comm, count, scclFloat32, &config),
                         scclSuccess, "create"))
      return;
    std::vector<float> grad(count), out(count, 7.0f);
    for (size_t i = 0; i < count; ++i) grad[i] = float((i * 37 + size_t(rank)) % 101) - 50.0f;
    for (scclRedOp_t op : {scclMax, scclMin}) {
      log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, op,
                                          sparsifier, comm, nullptr),
                      scclInvalidArgument, "sparse max/min");
      log.check(std::string(scclGetLastError(comm)).find("scclSum or scclAvg") != std::string::npos,
                std::string("the message says which ops: ") + scclGetLastError(comm));
      log.check(out[0] == 7.0f && out[count - 1] == 7.0f, "recvbuf untouched");
    }
    log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum,
                                        sparsifier, comm, nullptr),
                    scclSuccess, "the next sparse call");
    scclSparsifierDestroy(sparsifier);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
