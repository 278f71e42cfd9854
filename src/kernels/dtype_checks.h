// The argument checks every kernel backend applies to element types: the accumulator types
// (float32, float64) and which gradient type an accumulator holds. One definition, so that the
// CPU and CUDA backends accept and refuse the same calls with the same text.
#pragma once

#include "core/dtype.h"
#include "core/error.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// float32 or float64: the types residuals, sketches and selections run on.
inline bool isAccType(scclDataType_t dtype) {
  return dtype == scclFloat32 || dtype == scclFloat64;
}

inline scclResult_t requireAccType(scclDataType_t dtype, const char* kernel) {
  if (isAccType(dtype)) return scclSuccess;
  return fail(scclInvalidArgument, "%s: %s data is not supported (float32 or float64)", kernel,
              dataTypeName(dtype));
}

// Whether an accumulator of acc_dtype holds data_dtype exactly: float64 for float64, float32 for
// float32, float16 and bfloat16.
inline bool accumulatorHolds(scclDataType_t acc_dtype, scclDataType_t data_dtype) {
  return (acc_dtype == scclFloat64 && data_dtype == scclFloat64) ||
         (acc_dtype == scclFloat32 && (data_dtype == scclFloat32 || data_dtype == scclFloat16 ||
                                       data_dtype == scclBfloat16));
}

}  // namespace sccl
