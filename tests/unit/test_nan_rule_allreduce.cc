// The NaN rule in the transports' rank-order all-reduce (kernels/shared/rank_order_combine.h,
// which the NCCL transport's kernel shares) and scclAvg's division (core/divide_by_ranks.cc): with
// NaNs of different payloads and signs on different ranks, every rank receives the canonical NaN of
// the dtype wherever the result is NaN, and the exact value elsewhere, bit for bit. Sum, average,
// max and min through scclAllReduce on in-process ranks (the local, MPI and UCX transports all
// reduce with reduceInRankOrder), and through reduceInRankOrder itself.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "support/local_ranks.h"
#include "support/nan_patterns.h"
#include "transports/reduce_ops.h"

namespace {

using sccl_test::canonicalNaNBits;
using sccl_test::payloadNaNBits;
using sccl_test::RankLog;
using sccl_test::runLocalRanks;
using sccl_test::valueBits;

enum class Op { Sum, Avg, Max, Min };

constexpr size_t kCount = 2500;  // more than one 1024-element block of the host reduction

// Element i of `rank`'s input, as a double (NaN stands for a payload NaN, chosen by nanBitsAt):
// a NaN on the first rank only, on the last rank only, on every rank, +inf on rank 0 and -inf on
// rank 1 (their sum is NaN, their max not), or a small integer (sums exact in every type).
double inputValue(int rank, int nranks, size_t i) {
  switch (i % 7) {
    case 0: return rank == 0 ? NAN : 1.0;
    case 1: return rank == nranks - 1 ? NAN : -2.0;
    case 2: return NAN;
    case 3: return rank == 0 ? INFINITY : rank == 1 ? -INFINITY : 3.0;
    default: return double(int((i * 7 + size_t(rank) * 3) % 13) - 6);
  }
}

const char* opName(Op op) {
  return op == Op::Sum ? "sum" : op == Op::Avg ? "avg" : op == Op::Max ? "max" : "min";
}

uint64_t inputBits(scclDataType_t dtype, int rank, int nranks, size_t i) {
  const double v = inputValue(rank, nranks, i);
  return std::isnan(v) ? payloadNaNBits(dtype, i / 7 + size_t(rank)) : valueBits(dtype, v);
}

// The rule, from the values: rank-order sum, max or min in double (exact for these inputs), divided
// by the rank count in the dtype's arithmetic for scclAvg, canonical NaN wherever the result is
// NaN.
uint64_t expectedBits(scclDataType_t dtype, Op op, int nranks, size_t i) {
  double result = inputValue(0, nranks, i);
  for (int r = 1; r < nranks; ++r) {
    const double v = inputValue(r, nranks, i);
    if (op == Op::Max || op == Op::Min) {
      result = std::isnan(result) || std::isnan(v) ? NAN
               : op == Op::Max                     ? std::fmax(result, v)
                                                   : std::fmin(result, v);
    } else {
      result += v;
    }
  }
  if (op == Op::Avg) {
    result = dtype == scclFloat64 ? result / nranks : double(float(result) / float(nranks));
  }
  return std::isnan(result) ? canonicalNaNBits(dtype) : valueBits(dtype, result);
}

std::vector<unsigned char> rankInput(scclDataType_t dtype, int rank, int nranks) {
  std::vector<unsigned char> input(kCount * sccl::dataTypeSize(dtype));
  for (size_t i = 0; i < kCount; ++i) {
    sccl_test::putBits(dtype, input.data(), i, inputBits(dtype, rank, nranks, i));
  }
  return input;
}

std::vector<unsigned char> expectedResult(scclDataType_t dtype, Op op, int nranks) {
  std::vector<unsigned char> want(kCount * sccl::dataTypeSize(dtype));
  for (size_t i = 0; i < kCount; ++i) {
    sccl_test::putBits(dtype, want.data(), i, expectedBits(dtype, op, nranks, i));
  }
  return want;
}

void checkAllReduce(int rank, int nranks, scclComm_t comm, RankLog& log, scclDataType_t dtype,
                    scclRedOp_t op) {
  std::vector<unsigned char> send = rankInput(dtype, rank, nranks), recv(send.size());
  const Op rule = op == scclSum   ? Op::Sum
                  : op == scclAvg ? Op::Avg
                  : op == scclMax ? Op::Max
                                  : Op::Min;
  const std::vector<unsigned char> want = expectedResult(dtype, rule, nranks);
  const std::string what = std::string(sccl::dataTypeName(dtype)) + " " + opName(rule) + " over " +
                           std::to_string(nranks) + " ranks";
  if (!log.checkResult(scclAllReduce(send.data(), recv.data(), kCount, dtype, op, comm, nullptr),
                       scclSuccess, what)) {
    return;
  }
  const std::string differences =
      sccl_test::bitDifferences(dtype, want.data(), recv.data(), kCount);
  log.check(differences.empty(), what + ": " + differences);
}

}  // namespace

TEST_CASE("nan rule: dense all-reduce gives every rank the canonical NaN",
          "[nan_rule][local][comm]") {
  for (int nranks : {2, 3, 5}) {
    auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
      for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
        for (scclRedOp_t op : {scclSum, scclAvg, scclMax, scclMin}) {
          checkAllReduce(rank, nranks, comm, log, dtype, op);
        }
      }
    });
    CHECK_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("nan rule: rank-order sum, max and min write the canonical NaN",
          "[nan_rule][core][reduce]") {
  for (int nranks : {2, 3, 5}) {
    for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
      std::vector<std::vector<unsigned char>> inputs;
      std::vector<const void*> pointers;
      for (int r = 0; r < nranks; ++r) inputs.push_back(rankInput(dtype, r, nranks));
      for (const auto& input : inputs) pointers.push_back(input.data());
      for (Op op : {Op::Sum, Op::Max, Op::Min}) {
        INFO(sccl::dataTypeName(dtype) << " " << opName(op) << " of " << nranks);
        std::vector<unsigned char> out(inputs[0].size());
        sccl::reduceInRankOrder(pointers.data(), nranks, out.data(), kCount, dtype,
                                op == Op::Sum   ? sccl::ReduceOp::Sum
                                : op == Op::Max ? sccl::ReduceOp::Max
                                                : sccl::ReduceOp::Min);
        const std::vector<unsigned char> want = expectedResult(dtype, op, nranks);
        CHECK(sccl_test::bitDifferences(dtype, want.data(), out.data(), kCount) == "");
      }
    }
  }
}
