// out[i] = ((in_0[i] + in_1[i]) + in_2[i]) + ... over n inputs laid out one after the other (an
// all-gather's output), in rank order, with the transports' combine
// (kernels/shared/rank_order_combine.h; float16/bfloat16 combined in float32, rounded once). The
// NCCL transport's deterministic all-reduce is an ncclAllGather followed by this kernel.
#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/rank_order_combine.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

template <typename T>
__global__ void reduceTyped(const T* gathered, size_t count, int nranks, ReduceOp op, T* out) {
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    T acc = gathered[i];
    for (int r = 1; r < nranks; ++r)
      acc = rankOrderCombine(acc, gathered[size_t(r) * count + i], op);
    out[i] = acc;
  }
}

template <bool kBf16>
__global__ void reduceHalf(const uint16_t* gathered, size_t count, int nranks, ReduceOp op,
                           uint16_t* out) {
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    float acc = kBf16 ? bf16ToFloat(gathered[i]) : fp16ToFloat(gathered[i]);
    for (int r = 1; r < nranks; ++r) {
      const uint16_t h = gathered[size_t(r) * count + i];
      acc = rankOrderCombine(acc, kBf16 ? bf16ToFloat(h) : fp16ToFloat(h), op);
    }
    out[i] = kBf16 ? floatToBf16(acc) : floatToFp16(acc);
  }
}

template <typename T>
cudaError_t launch(const void* gathered, size_t count, int nranks, ReduceOp op, void* out,
                   cudaStream_t stream) {
  reduceTyped<<<gridFor(count), kThreads, 0, stream>>>(static_cast<const T*>(gathered), count,
                                                       nranks, op, static_cast<T*>(out));
  return cudaGetLastError();
}

}  // namespace

cudaError_t reduceRankOrder(const void* gathered, size_t count, int nranks, scclDataType_t dtype,
                            ReduceOp op, void* out, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
    case scclInt8: return launch<int8_t>(gathered, count, nranks, op, out, stream);
    case scclUint8: return launch<uint8_t>(gathered, count, nranks, op, out, stream);
    case scclInt32: return launch<int32_t>(gathered, count, nranks, op, out, stream);
    case scclUint32: return launch<uint32_t>(gathered, count, nranks, op, out, stream);
    case scclInt64: return launch<int64_t>(gathered, count, nranks, op, out, stream);
    case scclUint64: return launch<uint64_t>(gathered, count, nranks, op, out, stream);
    case scclFloat32: return launch<float>(gathered, count, nranks, op, out, stream);
    case scclFloat64: return launch<double>(gathered, count, nranks, op, out, stream);
    case scclFloat16:
      reduceHalf<false><<<gridFor(count), kThreads, 0, stream>>>(
          static_cast<const uint16_t*>(gathered), count, nranks, op, static_cast<uint16_t*>(out));
      return cudaGetLastError();
    default:
      reduceHalf<true><<<gridFor(count), kThreads, 0, stream>>>(
          static_cast<const uint16_t*>(gathered), count, nranks, op, static_cast<uint16_t*>(out));
      return cudaGetLastError();
  }
}

}  // namespace sccl::cuda_dispatch
