// scclPartitionedSelect through the public ABI: documented results, capacity overflow and retry,
// and every bad input answered with scclInvalidArgument and a message.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "support/typed_values.h"

namespace {

std::vector<float> sampleGradient(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(int((i * 37) % 101) - 50) / 10.0f;  // -5.0 .. 5.0
  return x;
}

}  // namespace

TEST_CASE("select returns |x| >= threshold in ascending order inside the range", "[select][api]") {
  auto x = sampleGradient(1000);
  std::vector<int64_t> idx(1000);
  std::vector<float> val(1000);
  size_t n = 0;
  REQUIRE(scclPartitionedSelect(x.data(), x.size(), scclFloat32, 100, 900, 4.5, idx.data(),
                                val.data(), idx.size(), &n, nullptr) == scclSuccess);
  std::vector<int64_t> expected;
  for (size_t i = 100; i < 900; ++i)
    if (std::fabs(x[i]) >= 4.5f) expected.push_back(int64_t(i));
  REQUIRE(n == expected.size());
  REQUIRE(n > 0);
  for (size_t j = 0; j < n; ++j) {
    CHECK(idx[j] == expected[j]);
    CHECK(val[j] == x[size_t(idx[j])]);
  }
}

TEST_CASE("select with too small a capacity reports the full count and a retry fits",
          "[select][api]") {
  auto x = sampleGradient(5000);
  size_t n = 0;
  std::vector<int64_t> idx(3, -1);
  REQUIRE(scclPartitionedSelect(x.data(), x.size(), scclFloat32, 0, x.size(), 4.0, idx.data(),
                                nullptr, idx.size(), &n, nullptr) == scclSuccess);
  REQUIRE(n > 3);
  // The entries written are the first `capacity` in index order.
  std::vector<int64_t> retry(n);
  size_t n2 = 0;
  REQUIRE(scclPartitionedSelect(x.data(), x.size(), scclFloat32, 0, x.size(), 4.0, retry.data(),
                                nullptr, retry.size(), &n2, nullptr) == scclSuccess);
  REQUIRE(n2 == n);
  for (size_t j = 0; j < 3; ++j) CHECK(idx[j] == retry[j]);
}

TEST_CASE("select sees NaN and infinity", "[select][api]") {
  std::vector<float> x = {0.1f, std::numeric_limits<float>::quiet_NaN(), -0.2f,
                          -std::numeric_limits<float>::infinity(), 0.0f};
  std::vector<int64_t> idx(5);
  size_t n = 0;
  REQUIRE(scclPartitionedSelect(x.data(), x.size(), scclFloat32, 0, x.size(), 1e30, idx.data(),
                                nullptr, idx.size(), &n, nullptr) == scclSuccess);
  REQUIRE(n == 2);
  CHECK(idx[0] == 1);
  CHECK(idx[1] == 3);
}

TEST_CASE("select rejects bad input with a message and no side effect", "[select][api][errors]") {
  auto x = sampleGradient(100);
  std::vector<int64_t> idx(100, -7);
  size_t n = 12345;
  int stream = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    const char* name;
    scclResult_t result;
  };
  std::vector<Case> cases = {
      {"null buf", scclPartitionedSelect(nullptr, 100, scclFloat32, 0, 100, 1, idx.data(), nullptr,
                                         100, &n, nullptr)},
      {"null idx", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, 1, nullptr, nullptr,
                                         100, &n, nullptr)},
      {"null nselected", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, 1, idx.data(),
                                               nullptr, 100, nullptr, nullptr)},
      {"begin > end", scclPartitionedSelect(x.data(), 100, scclFloat32, 60, 50, 1, idx.data(),
                                            nullptr, 100, &n, nullptr)},
      {"end > count", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 101, 1, idx.data(),
                                            nullptr, 100, &n, nullptr)},
      {"capacity 0", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, 1, idx.data(),
                                           nullptr, 0, &n, nullptr)},
      {"NaN threshold", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, nan, idx.data(),
                                              nullptr, 100, &n, nullptr)},
      {"negative threshold", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, -1,
                                                   idx.data(), nullptr, 100, &n, nullptr)},
      {"unknown dtype", scclPartitionedSelect(x.data(), 100, sccl_test::rawEnum<scclDataType_t>(42),
                                              0, 100, 1, idx.data(), nullptr, 100, &n, nullptr)},
      {"integer dtype", scclPartitionedSelect(x.data(), 100, scclInt32, 0, 100, 1, idx.data(),
                                              nullptr, 100, &n, nullptr)},
      {"count overflow", scclPartitionedSelect(x.data(), SIZE_MAX, scclFloat32, 0, 10, 1,
                                               idx.data(), nullptr, 100, &n, nullptr)},
      {"capacity overflow", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, 1, idx.data(),
                                                  nullptr, SIZE_MAX, &n, nullptr)},
      {"stream with host memory", scclPartitionedSelect(x.data(), 100, scclFloat32, 0, 100, 1,
                                                        idx.data(), nullptr, 100, &n, &stream)},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(c.result == scclInvalidArgument);
  }
  CHECK(std::strlen(scclGetLastError(nullptr)) > 0);
  CHECK(n == 12345);
  for (int64_t i : idx) CHECK(i == -7);
}

TEST_CASE("select of an empty range succeeds with zero selected", "[select][api]") {
  auto x = sampleGradient(10);
  int64_t idx[1];
  size_t n = 99;
  REQUIRE(scclPartitionedSelect(x.data(), x.size(), scclFloat32, 4, 4, 0.0, idx, nullptr, 1, &n,
                                nullptr) == scclSuccess);
  CHECK(n == 0);
}
