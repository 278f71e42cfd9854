// Uses library internals (links sparsecoll_objects): the threshold estimators and the CPU kernels.
// estimator_perf -m cost: see the header comment of estimator_perf.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/data.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/team.h"
#include "common/timing.h"
#include "common/watchdog.h"
#include "estimators/threshold_estimator.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernels.h"
#include "support/gradient_trace.h"

#include "estimator_bench.h"

namespace sccl_perf {
namespace {

constexpr double kMinSidcoSpeedup = 5.0;

// Sort-based exact top-k, the kind of baseline the SIDCo paper compared against (torch.topk):
// |x| copied to a scratch vector, then std::nth_element (linear on average) or std::partial_sort
// (n log k) puts the k-th largest magnitude at index k - 1; selection as for the estimators.
// Pass rows (no selection): one absMoments pass (moments, or moments and sum ln|x| as the gamma
// first stage), and a plain read of the same data - max |x| over slices on the kernel threads -
// as the floor any pass over the data costs.
enum class CostKind { Estimator, NthElement, PartialSort, PassMoments, PassMomentsLog, PassRead };

float readPass(const float* x, size_t count) {
  const size_t parts = sccl::kernelPartCount(count, size_t{1} << 16);
  std::vector<float> part_max(parts, 0.0f);
  sccl::cpuThreadPool().parallelFor(parts, [&](size_t p) {
    float lanes[16] = {};
    const size_t begin = count * p / parts, end = count * (p + 1) / parts;
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
      for (int l = 0; l < 16; ++l) lanes[l] = std::max(lanes[l], std::fabs(x[i + size_t(l)]));
    }
    for (; i < end; ++i) lanes[0] = std::max(lanes[0], std::fabs(x[i]));
    part_max[p] = *std::max_element(lanes, lanes + 16);
  });
  return *std::max_element(part_max.begin(), part_max.end());
}

double sortBasedKth(CostKind kind, const float* x, size_t count, uint64_t k,
                    std::vector<float>& scratch) {
  scratch.resize(count);
  for (size_t i = 0; i < count; ++i) scratch[i] = std::fabs(x[i]);
  auto kth = scratch.begin() + std::ptrdiff_t(k - 1);
  if (kind == CostKind::NthElement) {
    std::nth_element(scratch.begin(), kth, scratch.end(), std::greater<float>());
  } else {
    std::partial_sort(scratch.begin(), kth + 1, scratch.end(), std::greater<float>());
  }
  return double(*kth);
}

}  // namespace

int runCost(const PerfOptions& options, const KeyValues& machine) {
  const std::vector<size_t> counts = elementCounts(options);
  if (counts.empty()) return 2;
  ThreadTeam team(kernelThreads(options));
  ResultTable table({{"count", "count", 10, -1},
                     {"density", "density", 8, 4},
                     {"estimator", "estimator", 16, 0},
                     {"stages", "stages", 6, -1},
                     {"k", "k", 8, -1},
                     {"k^/k", "ratio", 8, 3},
                     {"est+sel(us)", "time_us", 12, 0},
                     {"topk(us)", "topk_us", 10, 0},
                     {"speedup", "speedup", 8, 2},
                     {"nth(us)", "nth_element_us", 10, 0},
                     {"x nth", "speedup_vs_nth_element", 7, 2},
                     {"psort(us)", "partial_sort_us", 10, 0},
                     {"x psort", "speedup_vs_partial_sort", 8, 2},
                     {"target", "target", 6, 0}});
  KeyValues settings = {{"mode", "cost"},
                        {"iters", std::to_string(options.iters)},
                        {"warmup", std::to_string(options.warmup)},
                        {"seed", std::to_string(options.seed)},
                        {"inputs", "Laplace(0,1) float32 from (seed, index)"},
                        {"sort baselines",
                         "|x| copy + std::nth_element / std::partial_sort, "
                         "one thread, then selectAbove"}};
  std::printf("# estimator_perf cost: estimation + selection vs exact top-k (median times)\n");
  printKeyValues(stdout, machine);
  printKeyValues(stdout, settings);
  table.printHeader(stdout);
  const size_t max_count = counts.back();
  std::vector<float> x(max_count), scratch;
  fillLaplace(team, x.data(), scclFloat32, max_count, options.seed);
  std::vector<int64_t> idx(max_count);
  const sccl::KernelBackend& kernels = sccl::cpuKernels();
  int passed = 0, failed = 0;
  struct CostSetup {
    EstimatorSetup setup;
    bool sidco;
    CostKind kind = CostKind::Estimator;
  };
  const std::vector<CostSetup> setups = {
      {{"topk", "topk"}, false},
      {{"nth_element", "topk"}, false, CostKind::NthElement},
      {{"partial_sort", "topk"}, false, CostKind::PartialSort},
      {{"sidco_exp", "sidco_exp", 1}, true},
      {{"sidco_exp", "sidco_exp", 2}, true},
      {{"sidco_gp", "sidco_gp", 1}, true},
      {{"sidco_gp", "sidco_gp", 2}, true},
      {{"sidco_gamma_gp", "sidco_gamma_gp", 1}, true},
      {{"sidco_gamma_gp", "sidco_gamma_gp", 2}, true},
      // The paper's estimator (feedback and count check off), for the cost of the check.
      {{"sidco_exp/fb0", "sidco_exp", 1, 0.0}, true},
      {{"sidco_gp/fb0", "sidco_gp", 1, 0.0}, true},
      {{"dgc", "dgc"}, false},
      {{"redsync", "redsync"}, false},
      {{"gaussiank", "gaussiank"}, false},
      {{"pass:moments", "topk"}, false, CostKind::PassMoments},
      {{"pass:moments+log", "topk"}, false, CostKind::PassMomentsLog},
      {{"pass:read", "topk"}, false, CostKind::PassRead}};
  for (size_t count : counts) {
    for (double density : options.densities) {
      const uint64_t k = sccl::targetSelectionCount(density, count);
      double topk_us = 0, nth_us = 0, psort_us = 0;
      for (const CostSetup& cs : setups) {
        watchdogKick(cs.setup.label + " cost at " + std::to_string(count) + " elements");
        auto estimator = makeEstimator(cs.setup, density, count);
        uint64_t selected = 0;
        sccl::ThresholdQuery query;
        query.kernels = &kernels;
        query.acc = x.data();
        query.range = {0, count};
        query.k_target_local = k;
        int iteration = 0;
        Timing timing = timeIterations(options.warmup, options.iters, [&] {
          query.iteration = uint64_t(iteration++);
          double t = 0;
          size_t n = 0;
          scclResult_t rc = scclSuccess;
          if (cs.kind == CostKind::PassMoments || cs.kind == CostKind::PassMomentsLog) {
            sccl::AbsMoments moments;
            if (kernels.absMoments(
                    x.data(), scclFloat32, 0, count, std::numeric_limits<double>::denorm_min(),
                    cs.kind == CostKind::PassMomentsLog, &moments, nullptr) != scclSuccess) {
              std::exit(1);
            }
            selected = moments.count;
            return;
          }
          if (cs.kind == CostKind::PassRead) {
            selected = readPass(x.data(), count) > 0 ? count : 0;
            return;
          }
          if (cs.kind == CostKind::Estimator) {
            rc = estimator->threshold(query, &t);
          } else {
            t = sortBasedKth(cs.kind, x.data(), count, k, scratch);
          }
          if (rc != scclSuccess ||
              kernels.selectAbove(x.data(), scclFloat32, 0, count, t, idx.data(), nullptr,
                                  idx.size(), &n, nullptr) != scclSuccess) {
            std::fprintf(stderr, "%s failed: %s\n", cs.setup.label.c_str(),
                         scclGetLastError(nullptr));
            std::exit(1);
          }
          const bool exact = cs.kind != CostKind::Estimator || estimator->exactCount();
          selected = exact ? std::min<uint64_t>(n, k) : n;
        });
        if (cs.setup.label == "topk") topk_us = timing.median_us;
        if (cs.kind == CostKind::NthElement) nth_us = timing.median_us;
        if (cs.kind == CostKind::PartialSort) psort_us = timing.median_us;
        const double speedup = topk_us / timing.median_us;
        std::string target = "-";
        if (cs.sidco && count >= 26000000) {
          const bool ok = speedup >= kMinSidcoSpeedup;
          target = ok ? "PASS" : "FAIL";
          (ok ? passed : failed)++;
        }
        const bool pass_row = cs.kind == CostKind::PassMoments ||
                              cs.kind == CostKind::PassMomentsLog || cs.kind == CostKind::PassRead;
        const bool baselines_known =
            (cs.kind == CostKind::Estimator && cs.setup.label != "topk") || pass_row;
        const double nan = std::numeric_limits<double>::quiet_NaN();
        table.addRow(
            {double(count), density, cs.setup.label, double(cs.setup.stages), double(k),
             pass_row ? nan : double(selected) / double(k), timing.median_us, topk_us, speedup,
             baselines_known ? nth_us : nan, baselines_known ? nth_us / timing.median_us : nan,
             baselines_known ? psort_us : nan, baselines_known ? psort_us / timing.median_us : nan,
             target},
            stdout);
      }
    }
  }
  std::printf(
      "# target (every SIDCo variant >= %.0fx faster than exact top-k at 26M): "
      "%d PASS, %d FAIL\n",
      kMinSidcoSpeedup, passed, failed);
  if (!options.json_path.empty() &&
      !table.writeJson(options.json_path, "estimator_perf", machine, settings)) {
    std::fprintf(stderr, "cannot write %s\n", options.json_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace sccl_perf
