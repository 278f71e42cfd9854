// Inputs derived from (seed, rank, index) and an independent reference of the transports'
// allReduce (transports/transport.h: ((x_0 + x_1) + x_2) + ... in rank order), shared by the
// multi-process tests of every transport (tests/mpi, tests/ucx): every rank computes the exact
// expected result of a collective on its own and compares it bitwise.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"

namespace sccl_test {

// splitmix64 of (seed, rank, index): the source of every input bit.
inline uint64_t mix(uint64_t seed, int rank, size_t index) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(rank) * 0xbf58476d1ce4e5b9ull +
               static_cast<uint64_t>(index) * 0x94d049bb133111ebull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A finite value whose exponents vary, so that sums round and their order shows in the bits.
inline double spreadValue(uint64_t bits, int mantissa_bits, int min_exponent, int max_exponent) {
  int64_t mantissa =
      static_cast<int64_t>(bits >> (64 - mantissa_bits)) - (int64_t{1} << (mantissa_bits - 1));
  int span = max_exponent - min_exponent + 1;
  int exponent = min_exponent + static_cast<int>(bits % static_cast<uint64_t>(span));
  return std::ldexp(static_cast<double>(mantissa), exponent - mantissa_bits);
}

// Rank `rank`'s input element `index` as dtype bits. Integers take all bits (so sums wrap);
// floats are finite with varied exponents; with_nans puts a NaN (with a payload) at about one
// element in 40 of each rank.
inline void storeInput(scclDataType_t dtype, uint64_t seed, int rank, size_t index, bool with_nans,
                       void* out) {
  uint64_t h = mix(seed, rank, index);
  bool nan = with_nans && (h >> 8) % 40 == 0;
  auto put = [&](auto value) { std::memcpy(out, &value, sizeof(value)); };
  switch (dtype) {
    case scclInt8:
    case scclUint8: put(static_cast<uint8_t>(h)); break;
    case scclInt32:
    case scclUint32: put(static_cast<uint32_t>(h)); break;
    case scclInt64:
    case scclUint64: put(h); break;
    case scclFloat16:
      put(nan ? static_cast<uint16_t>(0x7e00 | (h & 0x1ff))
              : sccl::floatToFp16(static_cast<float>(spreadValue(h, 11, -8, 4))));
      break;
    case scclBfloat16:
      put(nan ? static_cast<uint16_t>(0x7fc0 | (h & 0x3f))
              : sccl::floatToBf16(static_cast<float>(spreadValue(h, 8, -20, 20))));
      break;
    case scclFloat32:
      if (nan)
        put(static_cast<uint32_t>(0x7fc00000u | (h & 0x3fffff)));
      else
        put(static_cast<float>(spreadValue(h, 24, -20, 20)));
      break;
    case scclFloat64:
      if (nan)
        put(0x7ff8000000000000ull | (h & 0xfffffffffull));
      else
        put(spreadValue(h, 53, -40, 40));
      break;
    case scclNumTypes: break;
  }
}

inline std::vector<std::byte> makeInput(scclDataType_t dtype, uint64_t seed, int rank, size_t count,
                                        bool with_nans) {
  size_t element = sccl::dataTypeSize(dtype);
  std::vector<std::byte> buffer(count * element);
  for (size_t i = 0; i < count; ++i)
    storeInput(dtype, seed, rank, i, with_nans, &buffer[i * element]);
  return buffer;
}

// The reductions the reference knows, its own names (not the library's enum: the reference is
// written independently of it).
enum class ReferenceOp { Sum, Max, Min };

// The reference: written independently of reduce_ops.cc from the rule in transport.h and the NaN
// rule (docs/kernels.md, "NaN payloads"): a floating result that is NaN, of a sum or of a max/min
// with a NaN operand, is quiet_NaN (the canonical NaN), whatever the inputs' payloads. Max and min
// keep the earlier rank's operand on ties (+0 against -0 included).
template <typename Acc>
Acc combineReference(Acc acc, Acc x, ReferenceOp op) {
  Acc result;
  if (op == ReferenceOp::Max)
    result = acc < x ? x : acc;
  else if (op == ReferenceOp::Min)
    result = x < acc ? x : acc;
  else
    result = acc + x;
  if constexpr (std::is_floating_point_v<Acc>) {
    if (std::isnan(acc) || std::isnan(x) || std::isnan(result)) {
      return std::numeric_limits<Acc>::quiet_NaN();
    }
  }
  return result;
}

template <typename T, typename Acc = T>
void referenceTyped(uint64_t seed, int nranks, size_t count, ReferenceOp op, bool with_nans,
                    Acc (*load)(T), T (*store)(Acc), scclDataType_t dtype, std::byte* out) {
  auto input = [&](int rank, size_t index) {
    unsigned char raw[8] = {};  // storeInput writes up to 8 bytes
    storeInput(dtype, seed, rank, index, with_nans, raw);
    T element;
    std::memcpy(&element, raw, sizeof(T));
    return load(element);
  };
  for (size_t i = 0; i < count; ++i) {
    Acc acc = input(0, i);
    for (int r = 1; r < nranks; ++r) acc = combineReference(acc, input(r, i), op);
    T result = store(acc);
    std::memcpy(out + i * sizeof(T), &result, sizeof(T));
  }
}

template <typename T>
T identity(T value) {
  return value;
}

// Integer sums wrap: computed on the unsigned type (the bit pattern of any signed wrap); max and
// min compare as the signed or unsigned type itself.
template <typename S, typename U>
void referenceInteger(uint64_t seed, int nranks, size_t count, ReferenceOp op, scclDataType_t dtype,
                      std::byte* out) {
  if (op != ReferenceOp::Sum)
    return referenceTyped<S>(seed, nranks, count, op, false, identity<S>, identity<S>, dtype, out);
  referenceTyped<U>(seed, nranks, count, op, false, identity<U>, identity<U>, dtype, out);
}

// The expected result of reducing every rank's makeInput(dtype, seed, rank, count, with_nans).
inline std::vector<std::byte> expectedReduction(scclDataType_t dtype, ReferenceOp op, uint64_t seed,
                                                int nranks, size_t count, bool with_nans) {
  std::vector<std::byte> out(count * sccl::dataTypeSize(dtype));
  std::byte* o = out.data();
  switch (dtype) {
    case scclInt8: referenceInteger<int8_t, uint8_t>(seed, nranks, count, op, dtype, o); break;
    case scclUint8: referenceInteger<uint8_t, uint8_t>(seed, nranks, count, op, dtype, o); break;
    case scclInt32: referenceInteger<int32_t, uint32_t>(seed, nranks, count, op, dtype, o); break;
    case scclUint32: referenceInteger<uint32_t, uint32_t>(seed, nranks, count, op, dtype, o); break;
    case scclInt64: referenceInteger<int64_t, uint64_t>(seed, nranks, count, op, dtype, o); break;
    case scclUint64: referenceInteger<uint64_t, uint64_t>(seed, nranks, count, op, dtype, o); break;
    case scclFloat32:
      referenceTyped<float>(seed, nranks, count, op, with_nans, identity<float>, identity<float>,
                            dtype, o);
      break;
    case scclFloat64:
      referenceTyped<double>(seed, nranks, count, op, with_nans, identity<double>, identity<double>,
                             dtype, o);
      break;
    case scclFloat16:
      referenceTyped<uint16_t, float>(seed, nranks, count, op, with_nans, sccl::fp16ToFloat,
                                      sccl::floatToFp16, dtype, o);
      break;
    case scclBfloat16:
      referenceTyped<uint16_t, float>(seed, nranks, count, op, with_nans, sccl::bf16ToFloat,
                                      sccl::floatToBf16, dtype, o);
      break;
    case scclNumTypes: break;
  }
  return out;
}

// Sum (max false) or max (max true), as the transport tests name them.
inline std::vector<std::byte> expectedAllReduce(scclDataType_t dtype, bool max, uint64_t seed,
                                                int nranks, size_t count, bool with_nans) {
  return expectedReduction(dtype, max ? ReferenceOp::Max : ReferenceOp::Sum, seed, nranks, count,
                           with_nans);
}

// Index of the first differing element, or -1 when the buffers are bitwise equal.
inline long long firstMismatch(const std::vector<std::byte>& got,
                               const std::vector<std::byte>& want, size_t element_bytes) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); i += element_bytes) {
    if (std::memcmp(&got[i], &want[i], element_bytes) != 0) {
      return static_cast<long long>(i / element_bytes);
    }
  }
  return -1;
}

}  // namespace sccl_test
