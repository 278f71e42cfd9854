// allReduce of the MPI transport, on every rank of the job: every dtype, Sum and Max, separate
// and in-place buffers, counts from 0 to 1 Mi including ones not divisible by the rank count.
// Inputs derive from (seed, rank, index) with varied exponents, so a wrong reduction order
// changes bits; each rank checks the result bitwise against its own reference computation. The
// same runs with a 64-byte message limit to cover the large-transfer (point-to-point) path.
#include <catch2/catch.hpp>

#include <string>

#include "mpi_test_support.h"
#include "support/reduce_scatter_check.h"

using namespace sccl_mpi_test;

namespace {

const char* opName(sccl::ReduceOp op) {
  return sccl::reduceOpName(op);
}

// Runs one allReduce and returns a description of the first wrong element ("" when exact).
std::string checkAllReduce(sccl::Transport& transport, scclDataType_t dtype, sccl::ReduceOp op,
                           size_t count, bool in_place, uint64_t seed) {
  bool with_nans = op != sccl::ReduceOp::Sum && sccl::isFloatingType(dtype);
  size_t element = sccl::dataTypeSize(dtype);
  std::vector<std::byte> send = makeInput(dtype, seed, transport.rank(), count, with_nans);
  std::vector<std::byte> recv(count * element, std::byte{0x5a});
  scclResult_t result = in_place ? transport.allReduce(send.data(), send.data(), count, dtype, op)
                                 : transport.allReduce(send.data(), recv.data(), count, dtype, op);
  if (result != scclSuccess) return std::string("allReduce returned ") + sccl::resultName(result);
  if (in_place) recv = send;
  std::vector<std::byte> want =
      expectedReduction(dtype, referenceOpOf(op), seed, transport.nranks(), count, with_nans);
  long long bad = firstMismatch(recv, want, element);
  if (bad < 0) return "";
  return "first wrong element " + std::to_string(bad);
}

void runAllReduceMatrix(sccl::Transport& transport, const std::vector<size_t>& counts) {
  uint64_t seed = 1;
  for (scclDataType_t dtype : {scclInt8, scclUint8, scclInt32, scclUint32, scclInt64, scclUint64,
                               scclFloat16, scclFloat32, scclFloat64, scclBfloat16}) {
    for (sccl::ReduceOp op : {sccl::ReduceOp::Sum, sccl::ReduceOp::Max, sccl::ReduceOp::Min}) {
      for (size_t count : counts) {
        for (bool in_place : {false, true}) {
          INFO(sccl::dataTypeName(dtype)
               << " " << opName(op) << " count " << count << (in_place ? " in place" : "")
               << " rank " << transport.rank() << " of " << transport.nranks());
          CHECK(checkAllReduce(transport, dtype, op, count, in_place, ++seed) == "");
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("mpi allReduce: every dtype and op is bitwise the rank-order reduction",
          "[mpi][allreduce]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  runAllReduceMatrix(*transport, {0, 1, 2, 3, 7, 1000, 1001, 12345});
}

TEST_CASE("mpi allReduce: one million elements", "[mpi][allreduce]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  const size_t count = size_t{1} << 20;
  for (scclDataType_t dtype : {scclFloat32, scclBfloat16, scclInt64}) {
    for (bool in_place : {false, true}) {
      INFO(sccl::dataTypeName(dtype) << (in_place ? " in place" : ""));
      CHECK(checkAllReduce(*transport, dtype, sccl::ReduceOp::Sum, count, in_place, 77) == "");
    }
  }
  CHECK(checkAllReduce(*transport, scclFloat64, sccl::ReduceOp::Max, count + 3, false, 78) == "");
}

TEST_CASE("mpi allReduce: pieces path (64-byte message limit) gives the same bits",
          "[mpi][allreduce][pieces]") {
  auto transport = makeWorldTransport(60000, 64);
  REQUIRE(transport);
  runAllReduceMatrix(*transport, {1, 7, 33, 1001});
}

TEST_CASE("mpi allReduce: bad arguments are rejected and the transport stays usable",
          "[mpi][allreduce][errors]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  std::vector<float> buffer(8, 1.0f);
  CHECK(transport->allReduce(buffer.data(), buffer.data(), 8, scclNumTypes, sccl::ReduceOp::Sum) ==
        scclInvalidArgument);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("unknown data type"));
  CHECK(transport->allReduce(nullptr, buffer.data(), 8, scclFloat32, sccl::ReduceOp::Sum) ==
        scclInvalidArgument);
  CHECK(transport->allReduce(buffer.data(), buffer.data(), 8, scclFloat32,
                             static_cast<sccl::ReduceOp>(7)) == scclInvalidArgument);
  CHECK(transport->allReduce(buffer.data(), buffer.data(), SIZE_MAX / 2, scclFloat32,
                             sccl::ReduceOp::Sum) == scclInvalidArgument);
  // Null buffers are fine when there is nothing to reduce.
  CHECK(transport->allReduce(nullptr, nullptr, 0, scclFloat32, sccl::ReduceOp::Sum) == scclSuccess);
  REQUIRE(transport->allReduce(buffer.data(), buffer.data(), 8, scclFloat32, sccl::ReduceOp::Sum) ==
          scclSuccess);
  CHECK(buffer[7] == static_cast<float>(transport->nranks()));
}

TEST_CASE("mpi reduceScatter: each rank's block of the rank-order reduction, every dtype and op",
          "[mpi][reduce_scatter]") {
  auto transport = makeWorldTransport();
  REQUIRE(transport);
  sccl_test::runReduceScatterMatrix(*transport, {0, 1, 7, 1000, 70001});
}

TEST_CASE("mpi reduceScatter: pieces path (64-byte message limit) gives the same bits",
          "[mpi][reduce_scatter][pieces]") {
  auto transport = makeWorldTransport(60000, 64);
  REQUIRE(transport);
  sccl_test::runReduceScatterMatrix(*transport, {1, 7, 1001});
}
