// select_perf: scclPartitionedSelect against the two figures that bound it on a CPU.
//
// For each size and density the exact threshold is the k-th largest |x| (k = density * count,
// found once, untimed), and three operations are timed over the same buffer:
//   read    a plain streaming read (max over 32-bit words, vectorised, same number of threads as
//           the library's CPU kernels): the memory-bandwidth ceiling of any one-pass selection;
//   select  scclPartitionedSelect over the whole buffer with that threshold (timed alternately
//           with read, so that load from other processes hits both alike);
//   topk    exact top-k of the same k with std::nth_element on a copy of |x| (single thread; the
//           copy is refreshed before every iteration and not timed).
// Targets (printed per row): select >= 70 % of the read bandwidth and >= 20x faster than top-k.
// -g 1: the selection of GPU buffers instead, timed with CUDA events (select_perf_gpu.cc).
// GCC 12 warns inside its own AVX-512 headers (PR 105593); the pragma covers only the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/data.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/team.h"
#include "common/timing.h"
#include "common/watchdog.h"
#include "select_perf_gpu.h"
#include "sparsecoll/sparsecoll.h"

namespace {

using namespace sccl_perf;

constexpr double kMinReadFraction = 0.70;
constexpr double kMinTopkSpeedup = 20.0;

// ---- read baseline: max over the buffer's 32-bit words ----------------------------------------
// Prefetched 8 KiB ahead like the library's selection loop: on the development machine that made
// the plain read faster too, so the ceiling is the better of the two reads, not a handicapped one.
constexpr size_t kPrefetchWords = 8192 / 4;

__attribute__((target("avx512f"))) uint32_t maxWordsAvx512(const uint32_t* w, size_t n) {
  __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if (i + kPrefetchWords < n) {
      for (int line = 0; line < 4; ++line)
        _mm_prefetch(w + i + kPrefetchWords + 16 * line, _MM_HINT_T0);
    }
    m0 = _mm512_max_epu32(m0, _mm512_loadu_si512(w + i));
    m1 = _mm512_max_epu32(m1, _mm512_loadu_si512(w + i + 16));
    m2 = _mm512_max_epu32(m2, _mm512_loadu_si512(w + i + 32));
    m3 = _mm512_max_epu32(m3, _mm512_loadu_si512(w + i + 48));
  }
  uint32_t result =
      _mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3)));
  for (; i < n; ++i) result = std::max(result, w[i]);
  return result;
}

__attribute__((target("avx2"))) uint32_t maxWordsAvx2(const uint32_t* w, size_t n) {
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (i + kPrefetchWords < n) {
      for (int line = 0; line < 2; ++line)
        _mm_prefetch(w + i + kPrefetchWords + 16 * line, _MM_HINT_T0);
    }
    m0 = _mm256_max_epu32(m0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)));
    m1 = _mm256_max_epu32(m1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 8)));
    m2 = _mm256_max_epu32(m2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 16)));
    m3 = _mm256_max_epu32(m3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 24)));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3)));
  uint32_t result = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) result = std::max(result, w[i]);
  return result;
}

uint32_t maxWordsScalar(const uint32_t* w, size_t n) {
  uint32_t result = 0;
  for (size_t i = 0; i < n; ++i) result = std::max(result, w[i]);
  return result;
}

// The whole buffer on the team; the result is kept so the reads cannot be optimised away.
uint32_t streamingRead(ThreadTeam& team, const std::string& isa, const void* buf, size_t bytes) {
  auto* words = static_cast<const uint32_t*>(buf);
  size_t nwords = bytes / 4;
  std::vector<uint32_t> partial(team.size(), 0);
  team.run([&](int t, int nthreads) {
    size_t begin = nwords * t / nthreads / 16 * 16;
    size_t end = t + 1 == nthreads ? nwords : nwords * (t + 1) / nthreads / 16 * 16;
    auto kernel = isa == "avx512" ? maxWordsAvx512 : isa == "avx2" ? maxWordsAvx2 : maxWordsScalar;
    partial[t] = kernel(words + begin, end - begin);
  });
  return *std::max_element(partial.begin(), partial.end());
}

// ---- verification -----------------------------------------------------------------------------

// Entries that differ from a scalar evaluation of the contract (plus any count difference).
size_t countWrong(const void* x, scclDataType_t dtype, size_t count, double threshold,
                  const int64_t* idx, const unsigned char* val, size_t nselected) {
  const size_t width = dtypeSize(dtype);
  size_t wrong = 0, j = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::fabs(loadAsDouble(x, dtype, i)) < threshold) continue;  // exact: both are doubles
    if (j < nselected) {
      bool same = idx[j] == static_cast<int64_t>(i) &&
                  std::memcmp(val + j * width, static_cast<const unsigned char*>(x) + i * width,
                              width) == 0;
      wrong += same ? 0 : 1;
    }
    ++j;
  }
  return wrong + (j > nselected ? j - nselected : nselected - j);
}

// ---- one size ---------------------------------------------------------------------------------

struct Buffers {
  std::unique_ptr<unsigned char[]> x;
  // |x| in the narrowest exact type: float for 16/32-bit data, double for float64.
  std::vector<float> magnitudes32;
  std::vector<double> magnitudes64;
  std::unique_ptr<int64_t[]> idx;
  std::unique_ptr<unsigned char[]> val;
};

struct RunContext {
  const PerfOptions& options;
  ThreadTeam& team;
  std::string isa;
  int topk_iters;
  ResultTable& table;
  int targets_failed = 0;
  int targets_passed = 0;
  size_t total_wrong = 0;
};

// The k-th largest of the first `count` magnitudes (untimed).
template <typename T>
double kthLargest(const std::vector<T>& magnitudes, size_t count, size_t k) {
  std::vector<T> work(magnitudes.begin(), magnitudes.begin() + count);
  std::nth_element(work.begin(), work.begin() + (count - k), work.end());
  return work[count - k];
}

// Times nth_element for k on a fresh copy of the first `count` magnitudes each iteration.
template <typename T>
Timing timeTopK(const std::vector<T>& magnitudes, size_t count, size_t k, int iters) {
  std::vector<T> work(count);
  auto refresh = [&] { std::copy(magnitudes.begin(), magnitudes.begin() + count, work.begin()); };
  auto nth = [&] { std::nth_element(work.begin(), work.begin() + (count - k), work.end()); };
  return timeIterations(1, iters, refresh, nth);
}

struct Measurement {
  size_t count, k, nselected, wrong;
  double density, threshold;
  Timing read, select, topk;
};

// One table row; the targets are judged here.
void reportRow(RunContext& run, const Measurement& m) {
  const PerfOptions& options = run.options;
  const double bytes = double(m.count * dtypeSize(options.dtype));
  double read_gbps = gigabytesPerSecond(bytes, m.read.median_us);
  double select_gbps = gigabytesPerSecond(bytes, m.select.median_us);
  double select_over_read = read_gbps > 0 ? select_gbps / read_gbps : 0;
  double topk_speedup = run.topk_iters > 0 ? m.topk.median_us / m.select.median_us : 0;
  bool pass = select_over_read >= kMinReadFraction &&
              (run.topk_iters == 0 || topk_speedup >= kMinTopkSpeedup);
  (pass ? run.targets_passed : run.targets_failed) += 1;
  run.table.addRow(
      {bytes, double(m.count), dtypeName(options.dtype), m.density, double(m.k), m.threshold,
       m.read.median_us, read_gbps, m.select.median_us, select_gbps, double(m.nselected),
       m.topk.median_us, gigabytesPerSecond(bytes, m.topk.median_us), select_over_read,
       topk_speedup, options.check ? Cell(double(m.wrong)) : Cell("N/A"), pass ? "PASS" : "FAIL"},
      stdout);
}

int runDensity(RunContext& run, Buffers& buffers, size_t count, double density) {
  const PerfOptions& options = run.options;
  const bool wide = options.dtype == scclFloat64;
  watchdogKick("select at " + std::to_string(count) + " elements, density " +
               std::to_string(density));
  Measurement m{};
  m.count = count;
  m.density = density;
  m.k = std::max<size_t>(1, static_cast<size_t>(std::llround(density * count)));
  m.threshold = wide ? kthLargest(buffers.magnitudes64, count, m.k)
                     : kthLargest(buffers.magnitudes32, count, m.k);

  scclResult_t status = scclSuccess;
  auto read_op = [&] {
    volatile uint32_t sink =
        streamingRead(run.team, run.isa, buffers.x.get(), count * dtypeSize(options.dtype));
    (void)sink;
  };
  auto select_op = [&] {
    status =
        scclPartitionedSelect(buffers.x.get(), count, options.dtype, 0, count, m.threshold,
                              buffers.idx.get(), buffers.val.get(), count, &m.nselected, nullptr);
  };
  std::vector<Timing> timings = timeInterleaved(options.warmup, options.iters, read_op, select_op);
  if (status != scclSuccess) {
    std::fprintf(stderr, "scclPartitionedSelect failed: %s\n", scclGetLastError(nullptr));
    return 1;
  }
  m.read = timings[0];
  m.select = timings[1];
  if (run.topk_iters > 0) {
    m.topk = wide ? timeTopK(buffers.magnitudes64, count, m.k, run.topk_iters)
                  : timeTopK(buffers.magnitudes32, count, m.k, run.topk_iters);
  }
  // The output of the last timed call, against a scalar evaluation of the contract.
  m.wrong = options.check ? countWrong(buffers.x.get(), options.dtype, count, m.threshold,
                                       buffers.idx.get(), buffers.val.get(), m.nselected)
                          : 0;
  run.total_wrong += m.wrong;
  reportRow(run, m);
  return 0;
}

Buffers allocateAndFill(RunContext& run, size_t max_count) {
  const PerfOptions& options = run.options;
  Buffers buffers;
  const size_t width = dtypeSize(options.dtype);
  buffers.x.reset(new unsigned char[max_count * width]);
  fillLaplace(run.team, buffers.x.get(), options.dtype, max_count, options.seed);
  const bool wide = options.dtype == scclFloat64;
  (wide ? buffers.magnitudes64.resize(max_count) : buffers.magnitudes32.resize(max_count));
  for (size_t i = 0; i < max_count; ++i) {
    double magnitude = std::fabs(loadAsDouble(buffers.x.get(), options.dtype, i));
    if (wide) {
      buffers.magnitudes64[i] = magnitude;
    } else {
      buffers.magnitudes32[i] = static_cast<float>(magnitude);
    }
  }
  buffers.idx.reset(new int64_t[max_count]);
  buffers.val.reset(new unsigned char[max_count * width]);
  return buffers;
}

std::vector<Column> tableColumns() {
  return {{"size(B)", "size_bytes", 12, -1},
          {"count", "count", 11, -1},
          {"type", "type", 8, 0},
          {"density", "density", 8, 4},
          {"k", "k", 9, -1},
          {"threshold", "threshold", 10, 4},
          {"read(us)", "read_us", 9, 1},
          {"GB/s", "read_gbps", 6, 2},
          {"select(us)", "select_us", 10, 1},
          {"GB/s", "select_gbps", 6, 2},
          {"nsel", "nselected", 9, -1},
          {"topk(us)", "topk_us", 10, 0},
          {"GB/s", "topk_gbps", 6, 2},
          {"sel/read", "select_over_read", 8, 3},
          {"topk/sel", "topk_over_select", 8, 1},
          {"#wrong", "wrong", 6, -1},
          {"target", "target", 6, 0}};
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = options.max_size = 104000000;  // 26,000,000 float32: the target size
  int topk_iters = 5;
  std::vector<ExtraFlag> extra = {
      {'k', "N      timed top-k (nth_element) iterations (default 5; 0 skips the baseline)",
       [&](const char* text) { return (topk_iters = std::atoi(text)) >= 0; }}};
  int exit_code = 0;
  if (!parseOptions(argc, argv, "threshold selection vs streaming read vs exact top-k", extra,
                    &options, &exit_code)) {
    return exit_code;
  }
  std::vector<size_t> counts = elementCounts(options);
  if (counts.empty() || dtypeSize(options.dtype) == 0) return 2;

  ThreadTeam team(kernelThreads(options));
  ResultTable table(tableColumns());
  RunContext run{options, team, expectedKernelIsa(), topk_iters, table};
  KeyValues machine = machineDescription(options);
  KeyValues settings = {{"iters", std::to_string(options.iters)},
                        {"warmup", std::to_string(options.warmup)},
                        {"topk iters", std::to_string(topk_iters)},
                        {"seed", std::to_string(options.seed)},
                        {"inputs", "Laplace(0,1) from (seed, index)"}};
  std::printf("# select_perf: scclPartitionedSelect vs streaming read vs exact top-k\n");
  printKeyValues(stdout, machine);
  printKeyValues(stdout, settings);
  std::printf(
      "# read: max over 32-bit words, %s, prefetch 8 KiB ahead, %d threads, timed "
      "alternately with select | topk: std::nth_element on a copy of |x|, 1 thread, copy "
      "not timed | times: median\n",
      run.isa.c_str(), team.size());
  table.printHeader(stdout);

  Buffers buffers = allocateAndFill(run, counts.back());
  if (options.device) {
    // -g 1: the same inputs and thresholds on GPU buffers (select_perf_gpu.cc).
    std::vector<DeviceSelectCase> cases;
    for (size_t count : counts) {
      for (double density : options.densities) {
        DeviceSelectCase c{count, std::max<size_t>(1, size_t(std::llround(density * count))),
                           density, 0.0};
        c.threshold = options.dtype == scclFloat64 ? kthLargest(buffers.magnitudes64, count, c.k)
                                                   : kthLargest(buffers.magnitudes32, count, c.k);
        cases.push_back(c);
      }
    }
#if SCCL_PERF_WITH_CUDA
    return runDeviceSelect(options, buffers.x.get(), counts.back(), cases);
#else
    std::fprintf(stderr, "select_perf: -g 1 needs a build with the CUDA kernels (nvcc)\n");
    return 2;
#endif
  }
  for (size_t count : counts) {
    for (double density : options.densities) {
      if (runDensity(run, buffers, count, density) != 0) return 1;
    }
  }
  std::printf(
      "# targets (select >= %.0f%% of read bandwidth, >= %.0fx faster than top-k): "
      "%d PASS, %d FAIL\n",
      kMinReadFraction * 100, kMinTopkSpeedup, run.targets_passed, run.targets_failed);
  std::printf("# wrong entries: %zu %s\n", run.total_wrong, run.total_wrong ? "FAILED" : "OK");
  if (!options.json_path.empty() &&
      !table.writeJson(options.json_path, "select_perf", machine, settings)) {
    std::fprintf(stderr, "cannot write %s\n", options.json_path.c_str());
    return 1;
  }
  return run.total_wrong ? 1 : 0;
}
