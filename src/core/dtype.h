// Facts about scclDataType_t shared by every layer.
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

inline bool isValidDataType(int dtype) {
  return dtype >= 0 && dtype < scclNumTypes;
}

// Bytes per element; 0 for an invalid value.
inline size_t dataTypeSize(scclDataType_t dtype) {
  switch (dtype) {
    case scclInt8:
    case scclUint8: return 1;
    case scclFloat16:
    case scclBfloat16: return 2;
    case scclInt32:
    case scclUint32:
    case scclFloat32: return 4;
    case scclInt64:
    case scclUint64:
    case scclFloat64: return 8;
    case scclNumTypes: break;
  }
  return 0;
}

inline bool isFloatingType(scclDataType_t dtype) {
  return dtype == scclFloat16 || dtype == scclBfloat16 || dtype == scclFloat32 ||
         dtype == scclFloat64;
}

inline const char* dataTypeName(scclDataType_t dtype) {
  switch (dtype) {
    case scclInt8: return "int8";
    case scclUint8: return "uint8";
    case scclInt32: return "int32";
    case scclUint32: return "uint32";
    case scclInt64: return "int64";
    case scclUint64: return "uint64";
    case scclFloat16: return "float16";
    case scclFloat32: return "float32";
    case scclFloat64: return "float64";
    case scclBfloat16: return "bfloat16";
    case scclNumTypes: break;
  }
  return "invalid";
}

// count * dataTypeSize(dtype) into *bytes; false when it does not fit in size_t.
inline bool byteSize(size_t count, scclDataType_t dtype, size_t* bytes) {
  return !__builtin_mul_overflow(count, dataTypeSize(dtype), bytes);
}

}  // namespace sccl
