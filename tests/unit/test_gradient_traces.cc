// The committed real-gradient traces (tests/data/traces, written by scripts/gradient_traces.py)
// and their loader (tests/support/gradient_trace.h): every trace is intact and looks like the
// documented model's gradient, training changes the gradient statistics, and damaged files are
// refused with a message.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "support/gradient_trace.h"

namespace {

// conv(1->8,5) 208 + conv(8->16,5) 3216 + fc(256->128) 32896 + fc(128->10) 1290.
constexpr size_t kModelParameters = 37610;
constexpr size_t kClasses = 10;  // the last kClasses values are fc2.bias

std::string traceDir() {
  return std::string(SCCL_TEST_DATA_DIR) + "/traces";
}

std::vector<sccl_test::GradientTrace> loadAll() {
  std::vector<sccl_test::GradientTrace> traces;
  for (const std::string& path : sccl_test::listGradientTraces(traceDir())) {
    sccl_test::GradientTrace trace;
    std::string error;
    INFO(path);
    REQUIRE(sccl_test::loadGradientTrace(path, &trace, &error));
    traces.push_back(std::move(trace));
  }
  return traces;
}

double l2Norm(const std::vector<float>& values) {
  double sum = 0.0;
  for (float v : values) sum += static_cast<double>(v) * v;
  return std::sqrt(sum);
}

// Fraction of |g| at or above the reference hard threshold 1/(2 sqrt(k)), k = max(1, floor(1% of
// the count)) as src/estimators: the density the hard-threshold algorithm would select.
double hardThresholdDensity(const std::vector<float>& values) {
  const double k = std::max(1.0, std::floor(0.01 * static_cast<double>(values.size())));
  const double threshold = 1.0 / (2.0 * std::sqrt(k));
  size_t above = 0;
  for (float v : values) above += std::fabs(static_cast<double>(v)) >= threshold;
  return static_cast<double>(above) / static_cast<double>(values.size());
}

std::vector<unsigned char> readBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void writeBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

void putLe32(std::vector<unsigned char>& bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<unsigned char>(value >> (8 * i));
}

// A scratch directory removed at scope exit.
struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sccl_trace_test_" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("gradient traces: every committed trace loads intact", "[trace]") {
  const std::vector<std::string> paths = sccl_test::listGradientTraces(traceDir());
  REQUIRE(paths.size() >= 6);
  for (const std::string& path : paths) {
    INFO(path);
    sccl_test::GradientTrace trace;
    std::string error;
    REQUIRE(sccl_test::loadGradientTrace(path, &trace, &error));
    CHECK(error.empty());
    CHECK(trace.values.size() == kModelParameters);
    CHECK(trace.worker < trace.workers);

    char expectedSuffix[64];
    std::snprintf(expectedSuffix, sizeof(expectedSuffix), "_it%05u_w%u.sccltrace",
                  static_cast<unsigned>(trace.iteration), static_cast<unsigned>(trace.worker));
    CHECK(path.ends_with(expectedSuffix));

    size_t nonFinite = 0;
    size_t nonZero = 0;
    for (float v : trace.values) {
      nonFinite += !std::isfinite(v);
      nonZero += v != 0.0f;
    }
    CHECK(nonFinite == 0);
    // ReLU leaves some units dead on a 32-sample batch, but most entries carry gradient.
    CHECK(nonZero > trace.values.size() / 2);
    CHECK(l2Norm(trace.values) > 0.0);

    // Softmax cross-entropy: d loss / d (fc2.bias) = mean(softmax - one_hot), whose entries sum
    // to zero. This pins down the documented parameter order (fc2.bias last).
    double biasSum = 0.0;
    for (size_t c = trace.values.size() - kClasses; c < trace.values.size(); ++c) {
      biasSum += trace.values[c];
    }
    CHECK(std::fabs(biasSum) < 1e-5);
  }
}

TEST_CASE("gradient traces: each iteration has one distinct trace per worker", "[trace]") {
  const std::vector<sccl_test::GradientTrace> traces = loadAll();
  REQUIRE(!traces.empty());
  std::map<uint32_t, std::vector<const sccl_test::GradientTrace*>> byIteration;
  for (const auto& trace : traces) byIteration[trace.iteration].push_back(&trace);
  REQUIRE(byIteration.size() >= 2);

  const uint32_t workers = traces.front().workers;
  CHECK(workers >= 2);
  for (const auto& [iteration, group] : byIteration) {
    INFO("iteration " << iteration);
    REQUIRE(group.size() == workers);
    for (size_t w = 0; w < group.size(); ++w) {
      CHECK(group[w]->workers == workers);
      CHECK(group[w]->worker == w);  // sorted names: _w0, _w1, ...
    }
    // Every worker saw a different shard of the batch, so no two gradients are equal.
    for (size_t a = 0; a < group.size(); ++a) {
      for (size_t b = a + 1; b < group.size(); ++b) {
        CHECK(group[a]->values != group[b]->values);
      }
    }
  }
}

TEST_CASE("gradient traces: statistics differ between the earliest and latest iteration",
          "[trace]") {
  const std::vector<sccl_test::GradientTrace> traces = loadAll();
  std::map<uint32_t, std::vector<const sccl_test::GradientTrace*>> byIteration;
  for (const auto& trace : traces) byIteration[trace.iteration].push_back(&trace);
  REQUIRE(byIteration.size() >= 2);

  auto meanOver = [](const std::vector<const sccl_test::GradientTrace*>& group, auto statistic) {
    double sum = 0.0;
    for (const auto* trace : group) sum += statistic(trace->values);
    return sum / static_cast<double>(group.size());
  };
  const auto& early = byIteration.begin()->second;
  const auto& late = byIteration.rbegin()->second;
  const double earlyNorm = meanOver(early, l2Norm);
  const double lateNorm = meanOver(late, l2Norm);
  const double earlyDensity = meanOver(early, hardThresholdDensity);
  const double lateDensity = meanOver(late, hardThresholdDensity);
  INFO("iteration " << byIteration.begin()->first << ": mean L2 " << earlyNorm
                    << ", hard-threshold density " << earlyDensity);
  INFO("iteration " << byIteration.rbegin()->first << ": mean L2 " << lateNorm
                    << ", hard-threshold density " << lateDensity);
  CHECK(std::max(earlyNorm, lateNorm) > 1.5 * std::min(earlyNorm, lateNorm));
  CHECK(std::max(earlyDensity, lateDensity) > 2.0 * std::min(earlyDensity, lateDensity));
}

TEST_CASE("gradient traces: FNV-1a 64 checksum matches the reference values", "[trace]") {
  CHECK(sccl_test::gradientTraceChecksum("", 0) == 0xcbf29ce484222325ull);
  CHECK(sccl_test::gradientTraceChecksum("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(sccl_test::gradientTraceChecksum("foobar", 6) == 0x85944171f73967e8ull);
}

TEST_CASE("gradient traces: listing skips other files and missing folders", "[trace]") {
  const std::vector<std::string> paths = sccl_test::listGradientTraces(traceDir());
  REQUIRE(std::filesystem::exists(traceDir() + "/README.md"));
  for (const std::string& path : paths) CHECK(path.ends_with(".sccltrace"));
  CHECK(std::is_sorted(paths.begin(), paths.end()));
  CHECK(sccl_test::listGradientTraces(traceDir() + "/no-such-folder").empty());
}

TEST_CASE("gradient traces: damaged copies are rejected with a message", "[trace]") {
  const std::vector<std::string> paths = sccl_test::listGradientTraces(traceDir());
  REQUIRE(!paths.empty());
  const std::vector<unsigned char> original = readBytes(paths.front());
  REQUIRE(original.size() > sccl_test::kGradientTraceHeaderBytes);

  ScratchDir scratch;
  const std::string copy = (scratch.path / "damaged.sccltrace").string();
  std::vector<unsigned char> bytes = original;
  std::string expected;

  SECTION("an intact copy loads") {
    writeBytes(copy, bytes);
    sccl_test::GradientTrace trace;
    std::string error;
    CHECK(sccl_test::loadGradientTrace(copy, &trace, &error));
    CHECK(trace.values.size() == kModelParameters);
    return;
  }
  SECTION("one flipped payload byte") {
    bytes[sccl_test::kGradientTraceHeaderBytes + bytes.size() / 3] ^= 0x01;
    expected = "checksum";
  }
  SECTION("a flipped checksum byte") {
    bytes[40] ^= 0x80;
    expected = "checksum";
  }
  SECTION("truncated payload") {
    bytes.resize(bytes.size() - 1);
    expected = "header count";
  }
  SECTION("one byte appended") {
    bytes.push_back(0);
    expected = "header count";
  }
  SECTION("truncated header") {
    bytes.resize(20);
    expected = "shorter than";
  }
  SECTION("empty file") {
    bytes.clear();
    expected = "shorter than";
  }
  SECTION("wrong magic") {
    bytes[0] = 'X';
    expected = "magic";
  }
  SECTION("unknown format version") {
    putLe32(bytes, 8, 2);
    expected = "version";
  }
  SECTION("dtype other than float32") {
    putLe32(bytes, 12, 8);  // scclFloat64
    expected = "dtype";
  }
  SECTION("count larger than the file") {
    putLe32(bytes, 16, static_cast<uint32_t>(kModelParameters + 1));
    expected = "header count";
  }
  SECTION("count that overflows a byte size") {
    putLe32(bytes, 20, 0x40000000u);  // count = 2^62 + n: 4 * count wraps to the true 4 * n
    expected = "header count";
  }
  SECTION("worker not below workers") {
    putLe32(bytes, 28, 4);
    putLe32(bytes, 32, 4);
    expected = "worker 4";
  }
  SECTION("zero workers") {
    putLe32(bytes, 28, 0);
    putLe32(bytes, 32, 0);
    expected = "workers is 0";
  }
  SECTION("iteration zero") {
    putLe32(bytes, 24, 0);
    expected = "iteration 0";
  }
  SECTION("non-zero reserved field") {
    putLe32(bytes, 36, 1);
    expected = "reserved";
  }

  writeBytes(copy, bytes);
  sccl_test::GradientTrace untouched;
  untouched.iteration = 12345;
  std::string error;
  CHECK_FALSE(sccl_test::loadGradientTrace(copy, &untouched, &error));
  INFO(error);
  CHECK(error.find(copy) == 0);
  CHECK(error.find(expected) != std::string::npos);
  CHECK(untouched.iteration == 12345);
  CHECK(untouched.values.empty());
}

TEST_CASE("gradient traces: a missing file is reported", "[trace]") {
  sccl_test::GradientTrace trace;
  std::string error;
  CHECK_FALSE(sccl_test::loadGradientTrace(traceDir() + "/absent.sccltrace", &trace, &error));
  CHECK(error.find("cannot open") != std::string::npos);
  CHECK_FALSE(sccl_test::loadGradientTrace(traceDir() + "/absent.sccltrace", nullptr, nullptr));
}
