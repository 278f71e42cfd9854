#include "core/divide_by_ranks.h"

#include <cstdint>

#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/shared/canonical_nan.h"

namespace sccl {
namespace {

// A NaN quotient is written as the canonical NaN (kernels/shared/canonical_nan.h): x86 keeps the
// dividend's payload, CUDA's divideByRanks kernel would give its own, and results must agree bit
// for bit. A canonical float32 NaN narrows to the canonical float16/bfloat16 one.
template <typename T>
void divideTyped(T* values, size_t count, T divisor) {
  for (size_t i = 0; i < count; ++i) values[i] = canonicalizeNaN(values[i] / divisor);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void divideHalf(uint16_t* values, size_t count, float divisor) {
  for (size_t i = 0; i < count; ++i) {
    values[i] = FromFloat(canonicalizeNaN(ToFloat(values[i]) / divisor));
  }
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
