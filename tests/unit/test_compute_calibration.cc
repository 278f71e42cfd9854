// The calibration of the local work (src/tuning/compute_calibration.h): a batch measures every
// config it can run, fails only the ones it cannot (each with its own result), shares its
// communicator and gradients without changing what a config measures alone (the cache returns the
// batch's value), and refuses missing arrays.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tuning/compute_calibration.h"

namespace {

scclSparseConfig_t preset(const char* algorithm, double density) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = algorithm;
  config.density = density;
  return config;
}

}  // namespace

TEST_CASE("a calibration batch measures what it can run and fails only the rest",
          "[tuning][calibration]") {
  // Distinct counts per test case: the cache is per process and keyed by the count.
  const uint64_t count = 12288;
  const std::vector<scclSparseConfig_t> configs = {preset("micro", 0.01),
                                                   preset("no_such_preset", 0.01),
                                                   preset("dense", 0.01), preset("exdyna", 0.001)};
  std::vector<double> seconds(configs.size(), -1);
  std::vector<scclResult_t> results(configs.size(), scclInternalError);
  REQUIRE(sccl::calibrateComputeBatch(configs.data(), configs.size(), scclFloat32, count, 3,
                                      seconds.data(), results.data()) == scclSuccess);
  CHECK(results[0] == scclSuccess);
  CHECK(results[1] == scclInvalidArgument);
  CHECK(results[2] == scclSuccess);
  CHECK(results[3] == scclSuccess);
  for (size_t i : {0u, 2u, 3u}) {
    CHECK(seconds[i] > 0);
    CHECK(seconds[i] < 1e-6);  // a microsecond per element would be a broken measurement
  }
  CHECK(seconds[1] == 0);

  // Alone, each config returns what the batch measured (cached per process by its settings).
  for (size_t i : {0u, 2u, 3u}) {
    double alone = -1;
    REQUIRE(sccl::calibrateCompute(configs[i], scclFloat32, count, 3, &alone) == scclSuccess);
    CHECK(alone == seconds[i]);
  }
  double ignored = 0;
  CHECK(sccl::calibrateCompute(configs[1], scclFloat32, count, 3, &ignored) == scclInvalidArgument);
  CHECK(std::string(scclGetLastError(nullptr)).find("no_such_preset") != std::string::npos);
}

TEST_CASE("a calibration batch of one dense config draws its own gradients",
          "[tuning][calibration]") {
  // Dense takes whatever gradients a batch drew; alone, there are none yet.
  const scclSparseConfig_t dense = preset("dense", 1.0);
  double seconds = -1;
  scclResult_t result = scclInternalError;
  REQUIRE(sccl::calibrateComputeBatch(&dense, 1, scclFloat64, 5000, 1, &seconds, &result) ==
          scclSuccess);
  CHECK(result == scclSuccess);
  CHECK(seconds > 0);
}

TEST_CASE("a calibration batch refuses missing arrays and empty work", "[tuning][calibration]") {
  const scclSparseConfig_t micro = preset("micro", 0.01);
  double seconds = 0;
  scclResult_t result = scclSuccess;
  CHECK(sccl::calibrateComputeBatch(&micro, 1, scclFloat32, 4096, 1, nullptr, &result) ==
        scclInvalidArgument);
  CHECK(sccl::calibrateComputeBatch(&micro, 1, scclFloat32, 4096, 1, &seconds, nullptr) ==
        scclInvalidArgument);
  CHECK(sccl::calibrateComputeBatch(nullptr, 1, scclFloat32, 4096, 1, &seconds, &result) ==
        scclInvalidArgument);
  CHECK(sccl::calibrateComputeBatch(&micro, 1, scclFloat32, 0, 1, &seconds, &result) ==
        scclInvalidArgument);
  CHECK(sccl::calibrateComputeBatch(&micro, 1, scclFloat32, 4096, 0, &seconds, &result) ==
        scclInvalidArgument);
  // A dtype the library does not know fails that config, not the process.
  CHECK(sccl::calibrateComputeBatch(&micro, 1, static_cast<scclDataType_t>(99), 4096, 1, &seconds,
                                    &result) == scclSuccess);
  CHECK(result == scclInvalidArgument);
  // Nothing to measure is not an error.
  CHECK(sccl::calibrateComputeBatch(nullptr, 0, scclFloat32, 4096, 1, nullptr, nullptr) ==
        scclSuccess);
}
