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

#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "transports/bootstrap/bootstrap.h"
#include "core/dtype.h"
#include "core/error.h"
#include "sparsifier/sparse_config.h"
#include "sparsifier/sparsifier.h"
#include "tuning/calibration_gradients.h"

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

// What the configs of one batch share: the one-rank communicator they run on, the gradients and
// the output. Made per config, they cost about 60 % of auto's calibration on this project's
// Firecracker guest (one timed run: 18.8 of 31.9 ms; per candidate a new communicator 0.5-1.4 ms
// and two new 64K float32 gradients 1.9-5.4 ms: the draw's logarithms cost about 18 ns per
// element, and the first touch of new memory is slow there; now one draw and its permutation).
class CalibrationBench {
 public:
  // Nothing is allocated until a config is measured (a batch that the cache answers costs none).
  CalibrationBench(scclDataType_t dtype, uint64_t count) : dtype_(dtype), count_(count) {}
  ~CalibrationBench() {
    if (comm_ != nullptr) commDestroy(comm_, false);
  }
  CalibrationBench(const CalibrationBench&) = delete;
  CalibrationBench& operator=(const CalibrationBench&) = delete;

  scclResult_t measure(const ResolvedSparseConfig& config, int calls, double* seconds_per_element);

 private:
  // The two gradients (alternated, so the residual carries what was not sent, as in training)
  // of Laplace(0, scale) values (tuning/calibration_gradients.h), drawn again only where the
  // scale changes. A config that selects nothing (dense) costs the same on any values: it takes
  // whatever was drawn last.
  void prepareGradients(double scale, bool any_scale) {
    if (drawn_ && (any_scale || scale == scale_)) return;
    drawCalibrationGradients(1, dtype_, scale, count_, &gradients_[0], &gradients_[1]);
    drawn_ = true;
    scale_ = scale;
  }

  scclDataType_t dtype_;
  uint64_t count_;
  scclComm* comm_ = nullptr;
  std::vector<unsigned char> gradients_[2];
  std::vector<unsigned char> out_;
  bool drawn_ = false;
  double scale_ = 0;
};

scclResult_t CalibrationBench::measure(const ResolvedSparseConfig& config, int calls,
                                       double* seconds_per_element) {
  if (comm_ == nullptr) {
    scclUniqueId id;
    SCCL_CHECK(bootstrapCreateUniqueId(&id));
    CommInitRequest request;
    request.nranks = 1;
    request.rank = 0;
    request.id = &id;
    SCCL_CHECK(commCreate(request, &comm_));
  }
  scclSparsifier* sp = nullptr;
  scclResult_t result = sparsifierCreate(comm_, count_, dtype_, config, &sp);
  std::vector<double> seconds;
  if (result == scclSuccess) {
    // Sized only now: sparsifierCreate has checked the dtype (its size is 0 for an unknown one).
    out_.resize(count_ * dataTypeSize(dtype_));
    // The scale whose top-density threshold, scale ln(1/density), lies 10 % above the
    // estimators' initial threshold 1/(2 sqrt(k)): a gradient of the size they were made for.
    const double k = double(sp->k_target);
    const double density = k / double(count_);
    const double scale = density < 1 ? 1.1 / (2 * std::sqrt(k)) / std::log(1 / density) : 1.0;
    prepareGradients(scale, !sp->reduction->needs_selection);
    // Warm-up: the threshold estimators start from a guess and need calls to reach k (until then
    // a call selects far more or less than it will in training, and costs accordingly).
    int in_band = 0;
    for (int call = 0; call < kMaxWarmupCalls && in_band < 2 && result == scclSuccess; ++call) {
      result = sparseAllreduce(sp, gradients_[call % 2].data(), out_.data(), scclSum);
      scclSparseStats_t stats{};
      stats.size = sizeof(stats);
      if (result == scclSuccess) result = sparsifierStats(sp, &stats);
      const bool reached =
          !sp->reduction->needs_selection || std::fabs(stats.densityError) <= kWarmupDensityBand;
      in_band = reached ? in_band + 1 : 0;
    }
    for (int call = 0; call < calls && result == scclSuccess; ++call) {
      const auto start = std::chrono::steady_clock::now();
      result = sparseAllreduce(sp, gradients_[call % 2].data(), out_.data(), scclSum);
      const auto end = std::chrono::steady_clock::now();
      seconds.push_back(std::chrono::duration<double>(end - start).count());
    }
    sparsifierDestroy(sp);
  }
  if (result != scclSuccess) {
    // A failed call may have left the communicator unusable: the next config gets a new one.
    commDestroy(comm_, false);
    comm_ = nullptr;
  }
  SCCL_CHECK(result);
  std::sort(seconds.begin(), seconds.end());
  *seconds_per_element = seconds[seconds.size() / 2] / double(count_);
  return scclSuccess;
}

CacheKey cacheKey(const ResolvedSparseConfig& resolved, scclDataType_t dtype, uint64_t count) {
  return CacheKey{sparseConfigFingerprint(resolved, count, dtype), int(dtype), count};
}

}  // namespace

scclResult_t calibrateComputeBatch(const scclSparseConfig_t* configs, size_t n,
                                   scclDataType_t dtype, uint64_t count, int calls,
                                   double* seconds_per_element, scclResult_t* results) {
  SCCL_REQUIRE_ARG(
      n == 0 || (configs != nullptr && seconds_per_element != nullptr && results != nullptr),
      "calibration of %zu configs without their arrays", n);
  std::vector<ResolvedSparseConfig> resolved(n);
  std::vector<scclResult_t> resolution(n);
  for (size_t i = 0; i < n; ++i) resolution[i] = resolveSparseConfig(configs[i], &resolved[i]);
  SCCL_CHECK(calibrateResolvedBatch(resolved.data(), n, dtype, count, calls, seconds_per_element,
                                    results));
  for (size_t i = 0; i < n; ++i) {
    if (resolution[i] != scclSuccess) results[i] = resolution[i];
  }
  return scclSuccess;
}

scclResult_t calibrateResolvedBatch(const ResolvedSparseConfig* configs, size_t n,
                                    scclDataType_t dtype, uint64_t count, int calls,
                                    double* seconds_per_element, scclResult_t* results) {
  SCCL_REQUIRE_ARG(count > 0 && calls > 0, "calibration of %llu elements over %d calls",
                   static_cast<unsigned long long>(count), calls);
  SCCL_REQUIRE_ARG(
      n == 0 || (configs != nullptr && seconds_per_element != nullptr && results != nullptr),
      "calibration of %zu configs without their arrays", n);
  CalibrationBench bench(dtype, count);
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i) {
    seconds_per_element[i] = 0;
    results[i] = configs[i].algorithm.empty() ? scclInvalidArgument : scclSuccess;
    if (results[i] == scclSuccess) order.push_back(i);
  }
  // Configs that select nothing (dense) run last: they take the gradients the others drew.
  std::stable_partition(order.begin(), order.end(), [&](size_t i) {
    const ReductionEntry* reduction = findReduction(configs[i].reduction.c_str());
    return reduction == nullptr || reduction->needs_selection;
  });
  for (size_t i : order) {
    const CacheKey key = cacheKey(configs[i], dtype, count);
    {
      std::lock_guard<std::mutex> lock(cacheMutex());
      auto found = cache().find(key);
      if (found != cache().end()) {
        seconds_per_element[i] = found->second;
        continue;
      }
    }
    results[i] = bench.measure(configs[i], calls, &seconds_per_element[i]);
    if (results[i] != scclSuccess) continue;
    std::lock_guard<std::mutex> lock(cacheMutex());
    cache()[key] = seconds_per_element[i];
  }
  return scclSuccess;
}

scclResult_t calibrateCompute(const scclSparseConfig_t& config, scclDataType_t dtype,
                              uint64_t count, int calls, double* seconds_per_element) {
  scclResult_t result = scclSuccess;
  SCCL_CHECK(calibrateComputeBatch(&config, 1, dtype, count, calls, seconds_per_element, &result));
  return result;
}

}  // namespace sccl
