// Writing and reading one element of any scclDataType_t as a double, for tests whose expected
// values are small integers (exact in every type).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"

namespace sccl_test {

inline void storeValue(scclDataType_t dtype, void* base, size_t index, double value) {
  auto* bytes = static_cast<unsigned char*>(base) + index * sccl::dataTypeSize(dtype);
  auto put = [&](auto typed) { std::memcpy(bytes, &typed, sizeof(typed)); };
  switch (dtype) {
    case scclInt8: put(static_cast<int8_t>(value)); break;
    case scclUint8: put(static_cast<uint8_t>(static_cast<int64_t>(value))); break;
    case scclInt32: put(static_cast<int32_t>(value)); break;
    case scclUint32: put(static_cast<uint32_t>(static_cast<int64_t>(value))); break;
    case scclInt64: put(static_cast<int64_t>(value)); break;
    case scclUint64: put(static_cast<uint64_t>(static_cast<int64_t>(value))); break;
    case scclFloat16: put(sccl::floatToFp16(static_cast<float>(value))); break;
    case scclBfloat16: put(sccl::floatToBf16(static_cast<float>(value))); break;
    case scclFloat32: put(static_cast<float>(value)); break;
    case scclFloat64: put(value); break;
    case scclNumTypes: break;
  }
}

inline double loadValue(scclDataType_t dtype, const void* base, size_t index) {
  const auto* bytes = static_cast<const unsigned char*>(base) + index * sccl::dataTypeSize(dtype);
  auto get = [&](auto typed) {
    std::memcpy(&typed, bytes, sizeof(typed));
    return typed;
  };
  switch (dtype) {
    case scclInt8: return get(int8_t{});
    case scclUint8: return get(uint8_t{});
    case scclInt32: return get(int32_t{});
    case scclUint32: return get(uint32_t{});
    case scclInt64: return static_cast<double>(get(int64_t{}));
    case scclUint64: return static_cast<double>(get(uint64_t{}));
    case scclFloat16: return sccl::fp16ToFloat(get(uint16_t{}));
    case scclBfloat16: return sccl::bf16ToFloat(get(uint16_t{}));
    case scclFloat32: return get(float{});
    case scclFloat64: return get(double{});
    case scclNumTypes: break;
  }
  return 0;
}

// An enum value a C caller could pass but C++ cannot name without undefined behaviour.
template <typename Enum>
Enum rawEnum(int bits) {
  Enum value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline std::vector<scclDataType_t> allDataTypes() {
  std::vector<scclDataType_t> types;
  for (int t = 0; t < scclNumTypes; ++t) types.push_back(static_cast<scclDataType_t>(t));
  return types;
}

}  // namespace sccl_test
