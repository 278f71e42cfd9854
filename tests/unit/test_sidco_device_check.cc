// SIDCo's count check decided on the device (ThresholdEstimator::thresholdOrWord,
// kernels/shared/count_check.h) on the fake device: the threshold left in device memory is the
// pattern of the host estimator's threshold, bit for bit, through the first window alone and
// through the wide one; the counts are never read back (the first stage's moments are the one
// read-back); the estimator adopts the value the caller reads back; without the check (feedback
// 0, the paper's estimator) the threshold stays on the host.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "estimators/sidco_multistage.h"
#include "estimators/threshold_estimator.h"
#include "kernels/shared/magnitude_bits.h"
#include "support/fake_device.h"

using namespace sccl_test;

namespace {

std::vector<float> laplaceValues(size_t n, double scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> magnitude(1.0 / scale);
  std::vector<float> x(n);
  for (float& v : x) {
    const double m = magnitude(rng);
    v = float((rng() & 1) ? m : -m);
  }
  return x;
}

std::unique_ptr<sccl::ThresholdEstimator> sidco(const char* name, double density, size_t count,
                                                double feedback, int stages = 1) {
  sccl::EstimatorParams params;
  params.density = density;
  params.count = count;
  params.sidco_feedback = feedback;
  params.sidco_stages = stages;  // fixed: one read-back of moments per stage
  std::unique_ptr<sccl::ThresholdEstimator> estimator;
  REQUIRE(sccl::makeEstimator(name, params, &estimator) == scclSuccess);
  return estimator;
}

template <typename Value>
sccl::ThresholdQuery queryOver(const Value* x, size_t n, uint64_t k) {
  sccl::ThresholdQuery query;
  query.kernels = &sccl::cpuKernels();
  query.acc = x;
  query.acc_dtype = std::is_same_v<Value, double> ? scclFloat64 : scclFloat32;
  query.range = {0, n};
  query.k_target_local = k;
  return query;
}

struct DeviceAnswer {
  bool on_device = false;
  uint64_t bits = 0;     // the word's pattern, after the stream ran
  uint64_t to_host = 0;  // read-backs during the estimator's call
  uint64_t to_host_bytes = 0;
};

// thresholdOrWord on the fake device over a device copy of x.
template <typename Value>
DeviceAnswer onDevice(sccl::ThresholdEstimator& estimator, const std::vector<Value>& x,
                      uint64_t k) {
  FakeDevice device;
  FakeKernels kernels(device);
  FakeStaging staging(device);
  void* acc = device.allocate(x.size() * sizeof(Value));
  std::memcpy(device.view(acc), x.data(), x.size() * sizeof(Value));
  auto* word = static_cast<uint64_t*>(device.allocate(sizeof(uint64_t)));
  sccl::ThresholdQuery query = queryOver(static_cast<const Value*>(acc), x.size(), k);
  query.kernels = &kernels;
  query.device = &staging;
  DeviceAnswer answer;
  double threshold = 0;
  const DeviceCounters before = device.counters;
  REQUIRE(estimator.thresholdOrWord(query, word, &threshold, &answer.on_device) == scclSuccess);
  answer.to_host = device.counters.to_host - before.to_host;
  answer.to_host_bytes = device.counters.to_host_bytes - before.to_host_bytes;
  device.wait();
  answer.bits = *device.at(word);
  if (!answer.on_device) answer.bits = sccl::thresholdBits(query.acc_dtype, threshold);
  CHECK(device.violations.empty());
  return answer;
}

template <typename Value>
void requireSameAsHostCheck(const char* name, const std::vector<Value>& x, double density,
                            int observed_too_many, bool expect_widened, int stages = 1) {
  const uint64_t k = sccl::targetSelectionCount(density, x.size());
  auto host = sidco(name, density, x.size(), 0.25, stages);
  auto dev = sidco(name, density, x.size(), 0.25, stages);
  // A fit far too high: the feedback's correction grown by a run of calls that sent too many.
  for (int i = 0; i < observed_too_many; ++i) {
    host->observe(4 * k, k);
    dev->observe(4 * k, k);
  }
  const sccl::ThresholdQuery query = queryOver(x.data(), x.size(), k);
  double want = 0;
  REQUIRE(host->threshold(query, &want) == scclSuccess);
  const sccl::SidcoTrace* trace = sccl::sidcoLastTrace(*host);
  REQUIRE(trace->checked);
  CHECK(trace->check_widened == expect_widened);

  const DeviceAnswer got = onDevice(*dev, x, k);
  CHECK(got.on_device);
  CHECK(sccl::sidcoLastTrace(*dev)->on_device);
  const scclDataType_t acc_dtype = std::is_same_v<Value, double> ? scclFloat64 : scclFloat32;
  CHECK(got.bits == sccl::thresholdBits(acc_dtype, want));
  // One read-back per stage, its moments; no counts.
  CHECK(got.to_host == uint64_t(trace->stages_run));
  CHECK(got.to_host_bytes == uint64_t(trace->stages_run) * sizeof(sccl::AbsMoments));
  // The caller reads the pattern back with its plan and hands the value over.
  const double value = acc_dtype == scclFloat64 ? std::bit_cast<double>(got.bits)
                                                : double(std::bit_cast<float>(uint32_t(got.bits)));
  dev->adoptThreshold(value);
  const double adopted = dev->currentThreshold();
  CHECK(std::memcmp(&adopted, &want, sizeof(double)) == 0);
}

}  // namespace

TEST_CASE("SIDCo's count check on the device picks the host's threshold", "[sidco_device]") {
  const auto x = laplaceValues(200000, 0.01, 61);
  for (const char* name : {"sidco_exp", "sidco_gp", "sidco_gamma_gp"}) {
    for (double density : {0.01, 0.001}) {
      INFO(name << " density " << density);
      requireSameAsHostCheck(name, x, density, 0, false);
    }
  }
  SECTION("three stages: one read-back of moments each, still none of counts") {
    requireSameAsHostCheck("sidco_exp", x, 0.001, 0, false, 3);
  }
  SECTION("the first window holds fewer than k: the wide window runs on the device") {
    // 35 calls of four times too many: a correction near 6 puts the fit far above the tail.
    requireSameAsHostCheck("sidco_exp", x, 0.001, 35, true);
  }
  SECTION("float64 accumulators") {
    const std::vector<double> wide(x.begin(), x.end());
    requireSameAsHostCheck("sidco_gp", wide, 0.01, 0, false);
    requireSameAsHostCheck("sidco_exp", wide, 0.001, 35, true);
  }
}

TEST_CASE("SIDCo without the count check keeps its threshold on the host", "[sidco_device]") {
  const auto x = laplaceValues(50000, 0.01, 67);
  const uint64_t k = sccl::targetSelectionCount(0.01, x.size());
  auto paper = sidco("sidco_exp", 0.01, x.size(), 0.0);  // sidco_feedback 0: no check
  auto host = sidco("sidco_exp", 0.01, x.size(), 0.0);
  double want = 0;
  REQUIRE(host->threshold(queryOver(x.data(), x.size(), k), &want) == scclSuccess);
  const DeviceAnswer got = onDevice(*paper, x, k);
  CHECK_FALSE(got.on_device);
  CHECK(got.bits == sccl::thresholdBits(scclFloat32, want));
  const double current = paper->currentThreshold();
  CHECK(std::memcmp(&current, &want, sizeof(double)) == 0);
  // Ranges with nothing to fit answer on the host too (k = 0: nothing is selected).
  const DeviceAnswer none = onDevice(*paper, x, 0);
  CHECK_FALSE(none.on_device);
  CHECK(none.bits == sccl::thresholdBits(scclFloat32, std::numeric_limits<double>::infinity()));
}
