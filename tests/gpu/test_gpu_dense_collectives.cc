// The public dense collectives on device buffers over the NCCL transport, one rank per GPU
// (core/device_collectives.h): scclAllReduce (sum and average, float32 and float16) bitwise the
// host rank-order reduction and division, scclAllGather, scclBroadcast with the root's copy, all
// on a caller's stream; a GPU sendbuf with a host recvbuf is scclInvalidArgument and the
// communicator stays usable. Inputs carry NaNs with rank-dependent payloads: the reductions must
// write the canonical NaN (bitwise the host's), the all-gather and broadcast must keep the bits.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/divide_by_ranks.h"
#include "bit_mismatch.h"
#include "kernels/shared/half.h"
#include "device_buffer.h"
#include "gpu_ranks.h"
#include "sccl_build_config.h"
#include "support/local_ranks.h"
#include "support/nan_patterns.h"
#include "transports/reduce_ops.h"

using sccl_gpu_test::DeviceBuffer;

#if SCCL_BUILD_WITH_NCCL
namespace {

float valueOf(int rank, size_t i) {
  return float(int((i * 2654435761u + rank * 40503u) % 2001) - 1000) / 7.0f;
}

template <typename T>
std::vector<T> inputOf(int rank, size_t count) {
  std::vector<T> v(count);
  const scclDataType_t dtype = sizeof(T) == 2 ? scclFloat16 : scclFloat32;
  for (size_t i = 0; i < count; ++i) {
    if (i % 97 == 3) {  // a NaN whose payload and sign depend on the rank
      sccl_test::putBits(dtype, v.data(), i, sccl_test::payloadNaNBits(dtype, i + size_t(rank)));
    } else if constexpr (sizeof(T) == 2) {
      v[i] = sccl::floatToFp16(valueOf(rank, i));
    } else {
      v[i] = valueOf(rank, i);
    }
  }
  return v;
}

// The host result of an all-reduce of every rank's input: rank-order sum, then / n for scclAvg.
template <typename T>
std::vector<T> hostAllReduce(int nranks, size_t count, scclDataType_t dtype, scclRedOp_t op) {
  std::vector<std::vector<T>> inputs;
  std::vector<const void*> pointers;
  for (int r = 0; r < nranks; ++r) inputs.push_back(inputOf<T>(r, count));
  for (auto& in : inputs) pointers.push_back(in.data());
  std::vector<T> out(count);
  sccl::reduceInRankOrder(pointers.data(), nranks, out.data(), count, dtype, sccl::ReduceOp::Sum);
  if (op == scclAvg) sccl::divideByRanks(out.data(), count, dtype, nranks);
  return out;
}

template <typename T>
std::string checkAllReduce(int r, int nranks, scclComm_t comm, scclDataType_t dtype,
                           cudaStream_t stream) {
  const size_t count = 100003;
  for (scclRedOp_t op : {scclSum, scclAvg}) {
    DeviceBuffer<T> send(inputOf<T>(r, count)), recv(count);
    if (scclAllReduce(send.get(), recv.get(), count, dtype, op, comm, stream) != scclSuccess)
      return std::string("scclAllReduce: ") + scclGetLastError(comm);
    sccl_gpu_test::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const std::string mismatch =
        sccl_gpu_test::bitMismatch(std::string("scclAllReduce ") + (op == scclAvg ? "avg" : "sum") +
                                       " against the host rank-order result",
                                   hostAllReduce<T>(nranks, count, dtype, op), recv.read());
    if (!mismatch.empty()) return mismatch;
  }
  return "";
}

}  // namespace

TEST_CASE("dense collectives on device buffers equal the host results bit for bit",
          "[gpu][dense_device]") {
  const int nranks = sccl_gpu_test::gpuRankCount();
  REQUIRE(nranks >= 1);
  auto failures = sccl_gpu_test::onEveryGpu(nranks, [&](int r, scclComm_t comm) -> std::string {
    cudaStream_t stream = nullptr;
    sccl_gpu_test::check(cudaStreamCreate(&stream), "cudaStreamCreate");
    std::string failure = checkAllReduce<float>(r, nranks, comm, scclFloat32, stream);
    if (failure.empty()) failure = checkAllReduce<uint16_t>(r, nranks, comm, scclFloat16, stream);
    if (!failure.empty()) return failure;
    const size_t count = 4099;
    DeviceBuffer<float> mine(inputOf<float>(r, count)), all(count * size_t(nranks));
    if (scclAllGather(mine.get(), all.get(), count, scclFloat32, comm, stream) != scclSuccess)
      return std::string("scclAllGather: ") + scclGetLastError(comm);
    std::vector<float> gathered = all.read();
    for (int q = 0; q < nranks; ++q) {
      const std::string mismatch = sccl_gpu_test::bitMismatch(
          "scclAllGather block " + std::to_string(q), inputOf<float>(q, count).data(),
          gathered.data() + size_t(q) * count, count);
      if (!mismatch.empty()) return mismatch;
    }
    // Broadcast from the last rank, out of place (the root copies sendbuf into recvbuf).
    DeviceBuffer<float> received(count);
    if (scclBroadcast(mine.get(), received.get(), count, scclFloat32, nranks - 1, comm, stream) !=
        scclSuccess)
      return std::string("scclBroadcast: ") + scclGetLastError(comm);
    const std::string broadcast_mismatch = sccl_gpu_test::bitMismatch(
        "scclBroadcast", inputOf<float>(nranks - 1, count), received.read());
    if (!broadcast_mismatch.empty()) return broadcast_mismatch;
    // Mixed memory: refused, nothing changed, the communicator usable.
    std::vector<float> host(count);
    if (scclAllReduce(mine.get(), host.data(), count, scclFloat32, scclSum, comm, stream) !=
        scclInvalidArgument)
      return "a GPU sendbuf with a host recvbuf was not scclInvalidArgument";
    if (scclAllGather(mine.get(), all.get(), count, scclFloat32, comm, stream) != scclSuccess)
      return "a valid call after the refusal failed";
    cudaStreamDestroy(stream);
    return "";
  });
  CHECK_NO_RANK_FAILURES(failures);
}
#endif
