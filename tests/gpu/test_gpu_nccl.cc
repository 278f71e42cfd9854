// The NCCL transport with one rank per GPU (ranks are threads here, each on its own device):
// all-gather, the rank-order all-reduce (bitwise the CPU's reduceInRankOrder, sum and max,
// float32 and float16), broadcast, the grouped exchange and host buffers staged through device
// memory. Runs on every GPU of the machine, at most 8 (one GPU: a single-rank communicator).
// Inputs carry NaNs with rank-dependent payloads: sum and max write the canonical NaN (the
// transports' shared combine), the other collectives keep the bits. Host, device and mixed
// buffers: with one GPU this covers the transport's one-rank path, which skips NCCL.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "bit_mismatch.h"
#include "kernels/shared/half.h"
#include "device_buffer.h"
#include "gpu_ranks.h"
#include "sccl_build_config.h"
#include "support/local_ranks.h"
#include "support/nan_patterns.h"
#include "transports/reduce_ops.h"
#if SCCL_BUILD_WITH_NCCL
#include "transports/nccl/nccl_transport_impl.h"
#endif

using sccl_gpu_test::DeviceBuffer;

#if SCCL_BUILD_WITH_NCCL
namespace {

int rankCount() {
  return sccl_gpu_test::gpuRankCount();
}

float valueOf(int rank, size_t i) {
  if (i % 89 == 5) {  // a NaN whose payload and sign depend on the rank
    return sccl::bitsToFloat(uint32_t(sccl_test::payloadNaNBits(scclFloat32, i + size_t(rank))));
  }
  return float(int((i * 2654435761u + rank * 40503u) % 2001) - 1000) / 7.0f;
}

// "" or the short report of bit_mismatch.h.
std::string mismatch(const std::string& what, const std::vector<float>& expected,
                     const std::vector<float>& actual) {
  return sccl_gpu_test::bitMismatch(what, expected, actual);
}

// Runs body(rank, transport) on one thread per GPU; returns the failures.
template <typename Body>
std::vector<std::string> onEveryGpu(int nranks, Body body) {
  return sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
    auto* transport = dynamic_cast<sccl::NcclTransport*>(comm->transport.get());
    return transport == nullptr ? "not an NCCL transport" : body(r, *transport);
  });
}

}  // namespace

TEST_CASE("nccl transport collectives are exact and in rank order", "[gpu][nccl]") {
  const int nranks = rankCount();
  REQUIRE(nranks >= 1);
  const size_t count = 100003;
  // What every rank must get: the CPU reduction of the same inputs.
  std::vector<std::vector<float>> inputs(static_cast<size_t>(nranks), std::vector<float>(count));
  std::vector<const void*> pointers;
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i) inputs[size_t(r)][i] = valueOf(r, i);
    pointers.push_back(inputs[size_t(r)].data());
  }
  std::vector<float> want_sum(count), want_max(count);
  sccl::reduceInRankOrder(pointers.data(), nranks, want_sum.data(), count, scclFloat32,
                          sccl::ReduceOp::Sum);
  sccl::reduceInRankOrder(pointers.data(), nranks, want_max.data(), count, scclFloat32,
                          sccl::ReduceOp::Max);
  auto failures = onEveryGpu(nranks, [&](int r, sccl::NcclTransport& t) -> std::string {
    DeviceBuffer<float> send(inputs[size_t(r)]), recv(count);
    if (t.allReduce(send.get(), recv.get(), count, scclFloat32, sccl::ReduceOp::Sum) != scclSuccess)
      return std::string("allReduce: ") + scclGetLastError(nullptr);
    std::string failure =
        mismatch("allReduce sum against the rank-order sum", want_sum, recv.read());
    if (!failure.empty()) return failure;
    if (t.allReduce(send.get(), recv.get(), count, scclFloat32, sccl::ReduceOp::Max) != scclSuccess)
      return "allReduce max failed";
    failure = mismatch("allReduce max against the rank-order max", want_max, recv.read());
    if (!failure.empty()) return failure;
    // Host buffers, in place: staged through device memory.
    std::vector<float> host = inputs[size_t(r)];
    if (t.allReduce(host.data(), host.data(), count, scclFloat32, sccl::ReduceOp::Sum) !=
        scclSuccess)
      return "host allReduce failed";
    failure = mismatch("host allReduce against the rank-order sum", want_sum, host);
    if (!failure.empty()) return failure;
    // Host input, device output (the input staged); then device buffers in place. With one
    // rank these take the transport's NCCL-free path (nccl_transport.h), which must give the
    // same bits.
    std::vector<float> host_in = inputs[size_t(r)];
    recv.write(std::vector<float>(count, -1.0f));  // recv held the max already: overwrite it
    if (t.allReduce(host_in.data(), recv.get(), count, scclFloat32, sccl::ReduceOp::Max) !=
        scclSuccess)
      return "allReduce host to device failed";
    failure = mismatch("allReduce host to device against the rank-order max", want_max,
                       recv.read());
    if (!failure.empty()) return failure;
    DeviceBuffer<float> in_place(inputs[size_t(r)]);
    if (t.allReduce(in_place.get(), in_place.get(), count, scclFloat32, sccl::ReduceOp::Sum) !=
        scclSuccess)
      return "device allReduce in place failed";
    failure = mismatch("device allReduce in place against the rank-order sum", want_sum,
                       in_place.read());
    if (!failure.empty()) return failure;
    // All-gather and variable all-gather of host buffers.
    std::vector<float> host_all(count * size_t(nranks));
    if (t.allGather(host_in.data(), host_all.data(), count * 4) != scclSuccess)
      return "host allGather failed";
    std::vector<size_t> sizes(size_t(nranks), count * 4);
    std::vector<size_t> offsets(static_cast<size_t>(nranks));
    for (int q = 0; q < nranks; ++q) offsets[size_t(q)] = size_t(nranks - 1 - q) * count * 4;
    std::vector<float> host_v(count * size_t(nranks));
    if (t.allGatherV(host_in.data(), count * 4, host_v.data(), sizes.data(), offsets.data()) !=
        scclSuccess)
      return "host allGatherV failed";
    for (int q = 0; q < nranks; ++q) {
      failure = sccl_gpu_test::bitMismatch("host allGather block " + std::to_string(q),
                                           inputs[size_t(q)].data(),
                                           host_all.data() + size_t(q) * count, count);
      if (failure.empty()) {
        failure = sccl_gpu_test::bitMismatch(
            "host allGatherV block " + std::to_string(q), inputs[size_t(q)].data(),
            host_v.data() + size_t(nranks - 1 - q) * count, count);
      }
      if (!failure.empty()) return failure;
    }
    // All-gather of device buffers.
    DeviceBuffer<float> all(count * size_t(nranks));
    if (t.allGather(send.get(), all.get(), count * 4) != scclSuccess) return "allGather failed";
    std::vector<float> gathered = all.read();
    for (int q = 0; q < nranks; ++q) {
      failure = sccl_gpu_test::bitMismatch("allGather block " + std::to_string(q),
                                           inputs[size_t(q)].data(),
                                           gathered.data() + size_t(q) * count, count);
      if (!failure.empty()) return failure;
    }
    // Broadcast from the last rank.
    std::vector<float> b = inputs[size_t(r)];
    if (t.broadcast(b.data(), count * 4, nranks - 1) != scclSuccess) return "broadcast failed";
    failure = mismatch("broadcast", inputs[size_t(nranks - 1)], b);
    if (!failure.empty()) return failure;
    if (t.barrier() != scclSuccess) return "barrier failed";
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}

TEST_CASE("nccl transport exchanges pairs with grouped send and recv", "[gpu][nccl]") {
  const int nranks = rankCount();
  // One GPU: rank 0 exchanges with itself.
  const int pairs = nranks < 2 ? 1 : nranks / 2 * 2;
  const size_t count = 4099;
  auto failures = onEveryGpu(pairs, [&](int r, sccl::NcclTransport& t) -> std::string {
    const int peer = pairs == 1 ? 0 : r ^ 1;
    std::vector<float> mine(count), theirs(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      mine[i] = valueOf(r, i);
      want[i] = valueOf(peer, i);
    }
    DeviceBuffer<float> d_mine(mine), d_theirs(count);
    if (t.exchange(d_mine.get(), d_theirs.get(), count * 4, peer) != scclSuccess)
      return std::string("exchange: ") + scclGetLastError(nullptr);
    const std::string failure = mismatch("exchange", want, d_theirs.read());
    if (!failure.empty()) return failure;
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}
#endif
