#include "tuning/compute_calibration.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "comm/comm.h"
#include "transports/bootstrap/bootstrap.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier.h"

namespace sccl {
namespace {

// Warm-up ends after two calls in a row within 10 % of k, or after 40 calls.
constexpr int kMaxWarmupCalls = 40;
constexpr double kWarmupDensityBand = 0.1;

using CacheKey = std::tuple<uint64_t, int, uint64_t>;  // config fingerprint, dtype, count

std::mutex& cacheMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<CacheKey, double>& cache() {
  static std::map<CacheKey, double> values;
  return values;
}

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Laplace(0, scale) values of stream `seed`, written in dtype.
std::vector<unsigned char> laplaceGradient(uint64_t seed, scclDataType_t dtype, uint64_t count,
                                           double scale) {
  const size_t size = dataTypeSize(dtype);
  std::vector<unsigned char> bytes(count * size);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = mix(seed * 0x100000001B3ull + i);
    const double u = (double(h >> 11) + 0.5) / 9007199254740992.0;
    const double value = scale * ((h & 1) ? -std::log(u) : std::log(u));
    unsigned char* out = bytes.data() + i * size;
    if (dtype == scclFloat64) {
      std::memcpy(out, &value, 8);
    } else if (dtype == scclFloat16 || dtype == scclBfloat16) {
      const uint16_t half = dtype == scclFloat16 ? floatToFp16(float(value))
                                                 : floatToBf16(float(value));
      std::memcpy(out, &half, 2);
    } else {
      const float f = float(value);
      std::memcpy(out, &f, 4);
    }
  }
  return bytes;
}

scclResult_t measure(const scclSparseConfig_t& config, scclDataType_t dtype, uint64_t count,
                     int calls, double* seconds_per_element) {
  scclUniqueId id;
  SCCL_CHECK(bootstrapCreateUniqueId(&id));
  CommInitRequest request;
  request.nranks = 1;
  request.rank = 0;
  request.id = &id;
  scclComm* comm = nullptr;
  SCCL_CHECK(commCreate(request, &comm));
  scclSparsifier* sp = nullptr;
  scclResult_t result = sparsifierCreate(comm, count, dtype, config, &sp);
  std::vector<double> seconds;
  if (result == scclSuccess) {
    // The scale whose top-density threshold, scale ln(1/density), lies 10 % above the
    // estimators' initial threshold 1/(2 sqrt(k)): a gradient of the size they were made for.
    const double k = double(sp->k_target);
    const double density = k / double(count);
    const double scale = density < 1 ? 1.1 / (2 * std::sqrt(k)) / std::log(1 / density) : 1.0;
    const std::vector<unsigned char> gradients[2] = {laplaceGradient(1, dtype, count, scale),
                                                     laplaceGradient(2, dtype, count, scale)};
    std::vector<unsigned char> out(gradients[0].size());
    // Warm-up: the threshold estimators start from a guess and need calls to reach k (until then
    // a call selects far more or less than it will in training, and costs accordingly).
    int in_band = 0;
    for (int call = 0; call < kMaxWarmupCalls && in_band < 2 && result == scclSuccess; ++call) {
      result = sparseAllreduce(sp, gradients[call % 2].data(), out.data(), scclSum);
      scclSparseStats_t stats{};
      stats.size = sizeof(stats);
      if (result == scclSuccess) result = sparsifierStats(sp, &stats);
      const bool reached = !sp->reduction->needs_selection ||
                           std::fabs(stats.densityError) <= kWarmupDensityBand;
      in_band = reached ? in_band + 1 : 0;
    }
    for (int call = 0; call < calls && result == scclSuccess; ++call) {
      const auto start = std::chrono::steady_clock::now();
      result = sparseAllreduce(sp, gradients[call % 2].data(), out.data(), scclSum);
      const auto end = std::chrono::steady_clock::now();
      seconds.push_back(std::chrono::duration<double>(end - start).count());
    }
    sparsifierDestroy(sp);
  }
  commDestroy(comm, false);
  SCCL_CHECK(result);
  std::sort(seconds.begin(), seconds.end());
  *seconds_per_element = seconds[seconds.size() / 2] / double(count);
  return scclSuccess;
}

}  // namespace

scclResult_t calibrateCompute(const scclSparseConfig_t& config, scclDataType_t dtype,
                              uint64_t count, int calls, double* seconds_per_element) {
  SCCL_REQUIRE_ARG(count > 0 && calls > 0, "calibration of %llu elements over %d calls",
                   static_cast<unsigned long long>(count), calls);
  ResolvedSparseConfig resolved;
  SCCL_CHECK(resolveSparseConfig(config, &resolved));
  const CacheKey key{sparseConfigFingerprint(resolved, count, dtype), int(dtype), count};
  {
    std::lock_guard<std::mutex> lock(cacheMutex());
    auto found = cache().find(key);
    if (found != cache().end()) {
      *seconds_per_element = found->second;
      return scclSuccess;
    }
  }
  double measured = 0;
  SCCL_CHECK(measure(config, dtype, count, calls, &measured));
  std::lock_guard<std::mutex> lock(cacheMutex());
  cache()[key] = measured;
  *seconds_per_element = measured;
  return scclSuccess;
}

}  // namespace sccl
