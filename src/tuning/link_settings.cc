#include "tuning/link_settings.h"

#include <cstdio>

#include "core/error.h"
#include "core/settings.h"

namespace sccl {
namespace {

constexpr int64_t kMaxLatencyNs = 10'000'000'000;  // 10 s: beyond any link, a typo
constexpr int64_t kMaxRateMbits = 10'000'000;      // 10 Tbit/s

}  // namespace

GivenLink givenLinkSettings() {
  GivenLink given;
  given.latency_ns = paramLinkLatencyNs();
  given.rate_mbits = paramLinkRateMbits();
  return given;
}

scclResult_t checkGivenLink(const GivenLink& given) {
  SCCL_REQUIRE_ARG(given.latency_ns >= -1 && given.latency_ns <= kMaxLatencyNs,
                   "SCCL_LINK_LATENCY_NS=%lld: give the link's time per message step in ns, "
                   "0 .. %lld, or -1 (the default) to measure it",
                   static_cast<long long>(given.latency_ns), static_cast<long long>(kMaxLatencyNs));
  SCCL_REQUIRE_ARG(given.rate_mbits >= 0 && given.rate_mbits <= kMaxRateMbits,
                   "SCCL_LINK_RATE_MBITS=%lld: give the link's rate in Mbit/s, 1 .. %lld, or 0 "
                   "(the default) to measure it",
                   static_cast<long long>(given.rate_mbits), static_cast<long long>(kMaxRateMbits));
  return scclSuccess;
}

void applyGivenLink(const GivenLink& given, LinkModel* link) {
  if (given.hasLatency()) link->latency_s = double(given.latency_ns) * 1e-9;
  if (given.hasRate()) link->bytes_per_s = double(given.rate_mbits) * 1e6 / 8.0;
}

uint64_t givenLinkFingerprint(const GivenLink& given) {
  // Two odd multipliers (splitmix64's): distinct settings differ in the record.
  return (uint64_t(given.latency_ns) + 2) * 0x9e3779b97f4a7c15ull ^
         uint64_t(given.rate_mbits) * 0xbf58476d1ce4e5b9ull;
}

std::string describeGivenLink(const GivenLink& given) {
  char text[96];
  if (!given.hasLatency() && !given.hasRate()) return "probed";
  char latency[40] = "probed latency";
  char rate[40] = "probed rate";
  if (given.hasLatency())
    std::snprintf(latency, sizeof(latency), "%lld ns", static_cast<long long>(given.latency_ns));
  if (given.hasRate())
    std::snprintf(rate, sizeof(rate), "%lld Mbit/s", static_cast<long long>(given.rate_mbits));
  std::snprintf(text, sizeof(text), "given %s, %s", latency, rate);
  return text;
}

}  // namespace sccl
