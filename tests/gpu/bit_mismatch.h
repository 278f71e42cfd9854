// Bitwise comparison of a device result with the host's for the GPU tests, reported briefly:
// how many elements differ and the first few, each with its index, the input element (when
// given), and the expected and actual bit patterns. Catch2's own expansion of two vectors prints
// every element (hundreds of kilobytes, minutes on a large vector); these helpers never do.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sccl_gpu_test {

// The bit pattern of one element as 0x..., with as many digits as the element has.
template <typename T>
std::string bitPattern(const T& value) {
  static_assert(sizeof(T) <= 8, "elements of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  char text[24];
  std::snprintf(text, sizeof(text), "0x%0*llx", int(2 * sizeof(T)),
                static_cast<unsigned long long>(bits));
  return text;
}

// "" when expected and actual have the same length and bit patterns; otherwise a few lines: the
// number of differing elements and the first `shown` of them (input[i] too when input is given
// and long enough).
template <typename T, typename In = T>
std::string bitMismatch(const std::string& what, const std::vector<T>& expected,
                        const std::vector<T>& actual, const std::vector<In>* input = nullptr,
                        size_t shown = 6) {
  if (expected.size() != actual.size()) {
    return what + ": " + std::to_string(actual.size()) + " elements, expected " +
           std::to_string(expected.size());
  }
  size_t differing = 0;
  std::string lines;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(T)) == 0) continue;
    if (differing++ >= shown) continue;
    lines += "\n  [" + std::to_string(i) + "]";
    if (input != nullptr && i < input->size()) lines += " input " + bitPattern((*input)[i]);
    lines += " expected " + bitPattern(expected[i]) + " actual " + bitPattern(actual[i]);
  }
  if (differing == 0) return "";
  return what + ": " + std::to_string(differing) + " of " + std::to_string(expected.size()) +
         " elements differ; the first:" + lines;
}

// The same for two raw arrays of n elements.
template <typename T>
std::string bitMismatch(const std::string& what, const T* expected, const T* actual, size_t n) {
  return bitMismatch(what, std::vector<T>(expected, expected + n), std::vector<T>(actual, actual + n));
}

// The same for n elements of `width` bytes (1, 2, 4 or 8) held in byte arrays (the kernel tests
// keep every dtype's data as bytes): indices and patterns are reported per element, not per byte.
inline std::string bitMismatchOfWidth(const std::string& what, size_t width, const void* expected,
                                      const void* actual, size_t n) {
  auto typed = [&](auto element) {
    using T = decltype(element);
    std::vector<T> want(n), got(n);
    if (n != 0) {
      std::memcpy(want.data(), expected, n * sizeof(T));
      std::memcpy(got.data(), actual, n * sizeof(T));
    }
    return bitMismatch(what, want, got);
  };
  switch (width) {
    case 1: return typed(uint8_t{});
    case 2: return typed(uint16_t{});
    case 4: return typed(uint32_t{});
    case 8: return typed(uint64_t{});
    default: return what + ": elements of " + std::to_string(width) + " bytes cannot be compared";
  }
}

// Two byte vectors of elements of `width` bytes: their sizes, then their elements.
inline std::string bitMismatchOfWidth(const std::string& what, size_t width,
                                      const std::vector<uint8_t>& expected,
                                      const std::vector<uint8_t>& actual) {
  if (expected.size() != actual.size()) {
    return what + ": " + std::to_string(actual.size()) + " bytes, expected " +
           std::to_string(expected.size());
  }
  return bitMismatchOfWidth(what, width, expected.data(), actual.data(), expected.size() / width);
}

}  // namespace sccl_gpu_test

// CHECK that two vectors agree bit for bit; on failure only the short report is printed.
#define CHECK_BITS(what, expected, actual)                                                 \
  do {                                                                                     \
    const std::string sccl_mismatch_ = ::sccl_gpu_test::bitMismatch((what), (expected), (actual)); \
    INFO(sccl_mismatch_);                                                                  \
    CHECK(sccl_mismatch_.empty());                                                         \
  } while (0)

// The same with the input vector shown next to each differing element.
#define CHECK_BITS_WITH_INPUT(what, input, expected, actual)                                \
  do {                                                                                      \
    const auto& sccl_input_ = (input);                                                      \
    const std::string sccl_mismatch_ =                                                      \
        ::sccl_gpu_test::bitMismatch((what), (expected), (actual), &sccl_input_);           \
    INFO(sccl_mismatch_);                                                                   \
    CHECK(sccl_mismatch_.empty());                                                          \
  } while (0)

// CHECK that two byte vectors of `width`-byte elements agree bit for bit, reported per element.
#define CHECK_BITS_OF_WIDTH(what, width, expected, actual)                          \
  do {                                                                              \
    const std::string sccl_mismatch_ =                                              \
        ::sccl_gpu_test::bitMismatchOfWidth((what), (width), (expected), (actual)); \
    INFO(sccl_mismatch_);                                                           \
    CHECK(sccl_mismatch_.empty());                                                  \
  } while (0)
