// Transport::reduceScatter checked on every rank of a multi-process world, shared by the MPI and
// UCX suites (tests/mpi, tests/ucx) so both transports answer to the same matrix: each rank's
// block must be bitwise the same slice of the rank-order all-reduce reference
// (support/collective_reference.h), i.e. what allReduce of the whole buffer would leave there.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "support/collective_reference.h"
#include "transports/transport.h"

namespace sccl_test {

// The reference's name for a transport reduction.
inline ReferenceOp referenceOpOf(sccl::ReduceOp op) {
  return op == sccl::ReduceOp::Max   ? ReferenceOp::Max
         : op == sccl::ReduceOp::Min ? ReferenceOp::Min
                                     : ReferenceOp::Sum;
}

// Runs one reduceScatter: this rank's block of the rank-order reference ("" when exact).
// NaN inputs for every floating dtype, Sum included: the reference's canonical-NaN rule must
// hold for the block each rank owns, not only for a whole-buffer allReduce.
inline std::string checkReduceScatter(sccl::Transport& transport, scclDataType_t dtype,
                                      sccl::ReduceOp op, size_t recvcount, bool in_place,
                                      uint64_t seed) {
  const bool with_nans = sccl::isFloatingType(dtype);
  const size_t element = sccl::dataTypeSize(dtype), bytes = recvcount * element;
  const size_t n = static_cast<size_t>(transport.nranks()), own = transport.rank() * bytes;
  std::vector<std::byte> send = makeInput(dtype, seed, transport.rank(), recvcount * n, with_nans);
  // Pre-filled, so a block the call leaves unwritten cannot pass by reading zeros.
  std::vector<std::byte> recv(bytes, std::byte{0x5a});
  // In place means recv == send + rank * recvcount elements (transports/transport.h).
  void* out = in_place ? static_cast<void*>(send.data() + own) : recv.data();
  scclResult_t result = transport.reduceScatter(send.data(), out, recvcount, dtype, op);
  if (result != scclSuccess)
    return std::string("reduceScatter returned ") + sccl::resultName(result);
  if (in_place)
    recv.assign(send.begin() + std::ptrdiff_t(own), send.begin() + std::ptrdiff_t(own + bytes));
  const std::vector<std::byte> all = expectedReduction(
      dtype, referenceOpOf(op), seed, transport.nranks(), recvcount * n, with_nans);
  const std::vector<std::byte> want(all.begin() + std::ptrdiff_t(own),
                                    all.begin() + std::ptrdiff_t(own + bytes));
  long long bad = firstMismatch(recv, want, element);
  return bad < 0 ? "" : "first wrong element " + std::to_string(bad);
}

// Every dtype, Sum, Max and Min, separate and in-place buffers, on each recvcount of `counts` (a
// fresh seed per call, so no two calls see the same inputs).
inline void runReduceScatterMatrix(sccl::Transport& transport, const std::vector<size_t>& counts) {
  uint64_t seed = 500;
  for (scclDataType_t dtype : {scclInt8, scclUint8, scclInt32, scclUint32, scclInt64, scclUint64,
                               scclFloat16, scclFloat32, scclFloat64, scclBfloat16}) {
    for (sccl::ReduceOp op : {sccl::ReduceOp::Sum, sccl::ReduceOp::Max, sccl::ReduceOp::Min}) {
      for (size_t recvcount : counts) {
        for (bool in_place : {false, true}) {
          INFO("reduceScatter " << sccl::dataTypeName(dtype) << " " << sccl::reduceOpName(op)
                                << " recvcount " << recvcount << (in_place ? " in place" : "")
                                << " rank " << transport.rank() << " of " << transport.nranks());
          CHECK(checkReduceScatter(transport, dtype, op, recvcount, in_place, ++seed) == "");
        }
      }
    }
  }
}

}  // namespace sccl_test
