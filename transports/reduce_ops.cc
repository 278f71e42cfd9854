#include "transports/reduce_ops.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/shared/half.h"
#include "kernels/shared/rank_order_combine.h"

namespace sccl {
namespace {

// Block of elements reduced at a time: keeps the float32 partials of half types on the stack
// and the inputs' blocks in cache.
constexpr size_t kBlock = 1024;

// One definition with the CUDA rank-order reduction: kernels/shared/rank_order_combine.h.
template <typename T>
T combine(T a, T b, ReduceOp op) {
  return rankOrderCombine(a, b, op);
}

template <typename T>
void reduceTyped(const void* const* inputs, int ninputs, void* out, size_t count, ReduceOp op) {
  T* result = static_cast<T*>(out);
  for (size_t begin = 0; begin < count; begin += kBlock) {
    size_t end = (count - begin < kBlock) ? count : begin + kBlock;
    T acc[kBlock];
    const T* first = static_cast<const T*>(inputs[0]);
    for (size_t i = begin; i < end; ++i) acc[i - begin] = first[i];
    for (int r = 1; r < ninputs; ++r) {
      const T* in = static_cast<const T*>(inputs[r]);
      for (size_t i = begin; i < end; ++i) acc[i - begin] = combine(acc[i - begin], in[i], op);
    }
    for (size_t i = begin; i < end; ++i) result[i] = acc[i - begin];
  }
}

// Half types: widen to float, combine in float, round once.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduceHalf(const void* const* inputs, int ninputs, void* out, size_t count, ReduceOp op) {
  uint16_t* result = static_cast<uint16_t*>(out);
  for (size_t begin = 0; begin < count; begin += kBlock) {
    size_t end = (count - begin < kBlock) ? count : begin + kBlock;
    float acc[kBlock];
    const uint16_t* first = static_cast<const uint16_t*>(inputs[0]);
    for (size_t i = begin; i < end; ++i) acc[i - begin] = ToFloat(first[i]);
    for (int r = 1; r < ninputs; ++r) {
      const uint16_t* in = static_cast<const uint16_t*>(inputs[r]);
      for (size_t i = begin; i < end; ++i)
        acc[i - begin] = combine(acc[i - begin], ToFloat(in[i]), op);
    }
    for (size_t i = begin; i < end; ++i) result[i] = FromFloat(acc[i - begin]);
  }
}

}  // namespace

void reduceInRankOrder(const void* const* inputs, int ninputs, void* out, size_t count,
                       scclDataType_t dtype, ReduceOp op) {
  switch (dtype) {
    case scclInt8: return reduceTyped<int8_t>(inputs, ninputs, out, count, op);
    case scclUint8: return reduceTyped<uint8_t>(inputs, ninputs, out, count, op);
    case scclInt32: return reduceTyped<int32_t>(inputs, ninputs, out, count, op);
    case scclUint32: return reduceTyped<uint32_t>(inputs, ninputs, out, count, op);
    case scclInt64: return reduceTyped<int64_t>(inputs, ninputs, out, count, op);
    case scclUint64: return reduceTyped<uint64_t>(inputs, ninputs, out, count, op);
    case scclFloat32: return reduceTyped<float>(inputs, ninputs, out, count, op);
    case scclFloat64: return reduceTyped<double>(inputs, ninputs, out, count, op);
    case scclFloat16: return reduceHalf<fp16ToFloat, floatToFp16>(inputs, ninputs, out, count, op);
    case scclBfloat16: return reduceHalf<bf16ToFloat, floatToBf16>(inputs, ninputs, out, count, op);
    case scclNumTypes: break;
  }
}

}  // namespace sccl
