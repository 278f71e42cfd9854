#include "core/average.h"

#include <cstdint>

#include "core/error.h"
#include "core/half.h"

namespace sccl {
namespace {

template <typename T>
void divideTyped(T* values, size_t count, T divisor) {
  for (size_t i = 0; i < count; ++i) values[i] /= divisor;
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void divideHalf(uint16_t* values, size_t count, float divisor) {
  for (size_t i = 0; i < count; ++i) values[i] = FromFloat(ToFloat(values[i]) / divisor);
}

}  // namespace

scclResult_t divideByRanks(void* buffer, size_t count, scclDataType_t dtype, int nranks) {
  switch (dtype) {
    case scclFloat32:
      divideTyped(static_cast<float*>(buffer), count, static_cast<float>(nranks));
      return scclSuccess;
    case scclFloat64:
      divideTyped(static_cast<double*>(buffer), count, static_cast<double>(nranks));
      return scclSuccess;
    case scclFloat16:
      divideHalf<fp16ToFloat, floatToFp16>(static_cast<uint16_t*>(buffer), count, float(nranks));
      return scclSuccess;
    case scclBfloat16:
      divideHalf<bf16ToFloat, floatToBf16>(static_cast<uint16_t*>(buffer), count, float(nranks));
      return scclSuccess;
    default: break;
  }
  return fail(scclInternalError, "average of a non-floating type reached the division");
}

}  // namespace sccl
