// Core facilities: half-precision conversions (shared with the CUDA backend later), the
// rank-order reduction every transport uses, logging masks, the settings registry.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "kernels/shared/half.h"
#include "core/log.h"
#include "core/setting.h"
#include "transports/reduce_ops.h"

TEST_CASE("float16 and bfloat16 round-trip every bit pattern", "[core][half]") {
  size_t mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    float f16 = sccl::fp16ToFloat(h);
    float bf = sccl::bf16ToFloat(h);
    if (std::isnan(f16)) {
      mismatches += !std::isnan(sccl::fp16ToFloat(sccl::floatToFp16(f16)));
    } else {
      mismatches += sccl::floatToFp16(f16) != h;
    }
    if (std::isnan(bf)) {
      mismatches += !std::isnan(sccl::bf16ToFloat(sccl::floatToBf16(bf)));
    } else {
      mismatches += sccl::floatToBf16(bf) != h;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float to half rounds to nearest even and overflows to infinity", "[core][half]") {
  CHECK(sccl::fp16ToFloat(sccl::floatToFp16(1.0f + 1.0f / 2048.0f)) == 1.0f);  // tie -> even
  CHECK(sccl::fp16ToFloat(sccl::floatToFp16(1.0f + 3.0f / 2048.0f)) == 1.0f + 2.0f / 1024.0f);
  CHECK(sccl::fp16ToFloat(sccl::floatToFp16(65504.0f)) == 65504.0f);
  CHECK(std::isinf(sccl::fp16ToFloat(sccl::floatToFp16(65520.0f))));
  CHECK(sccl::fp16ToFloat(sccl::floatToFp16(5.9604644775390625e-8f)) == 5.9604644775390625e-8f);
  CHECK(sccl::fp16ToFloat(sccl::floatToFp16(2.0e-8f)) == 0.0f);
  CHECK(sccl::bf16ToFloat(sccl::floatToBf16(1.00390625f)) == 1.0f);  // tie -> even
  CHECK(sccl::bf16ToFloat(sccl::floatToBf16(1.01171875f)) == 1.015625f);
  CHECK(std::isnan(sccl::bf16ToFloat(sccl::floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("rank-order reduction sums left to right and propagates NaN in max", "[core][reduce]") {
  // (1e8 + 1) + -1e8 = 0 in float, while 1e8 + (1 + -1e8) = 8: the order is observable.
  float a[1] = {1e8f}, b[1] = {1.0f}, c[1] = {-1e8f}, out[1];
  const void* inputs[3] = {a, b, c};
  sccl::reduceInRankOrder(inputs, 3, out, 1, scclFloat32, sccl::ReduceOp::Sum);
  CHECK(out[0] == (1e8f + 1.0f) + -1e8f);
  float n[1] = {std::numeric_limits<float>::quiet_NaN()};
  const void* with_nan[3] = {a, n, c};
  sccl::reduceInRankOrder(with_nan, 3, out, 1, scclFloat32, sccl::ReduceOp::Max);
  CHECK(std::isnan(out[0]));
  int8_t x[1] = {120}, y[1] = {10}, z[1];
  const void* small[2] = {x, y};
  sccl::reduceInRankOrder(small, 2, z, 1, scclInt8, sccl::ReduceOp::Sum);
  CHECK(z[0] == static_cast<int8_t>(static_cast<uint8_t>(130)));  // wraps, defined behaviour
}

TEST_CASE("log subsystem masks parse lists and inversion", "[core][log]") {
  using sccl::LogSubsys;
  uint32_t init = static_cast<uint32_t>(LogSubsys::Init);
  uint32_t coll = static_cast<uint32_t>(LogSubsys::Coll);
  CHECK(sccl::parseSubsysMask("INIT") == init);
  CHECK(sccl::parseSubsysMask("init,COLL") == (init | coll));
  CHECK(sccl::parseSubsysMask("^INIT") == ~init);
  CHECK(sccl::parseSubsysMask("ALL") == ~0u);
  CHECK(sccl::parseSubsysMask("nonsense") == 0u);
}

TEST_CASE("every setting is declared once with a default and help text", "[core][params]") {
  auto params = sccl::registeredParams();
  REQUIRE(params.size() >= 8);
  std::set<std::string> names;
  for (const auto& param : params) {
    INFO(param.env_name);
    CHECK(param.env_name.rfind("SCCL_", 0) == 0);
    CHECK(!param.help.empty());
    CHECK(names.insert(param.env_name).second);
  }
  CHECK(names.count("SCCL_TIMEOUT_MS") == 1);
  CHECK(names.count("SCCL_DEBUG") == 1);
}
