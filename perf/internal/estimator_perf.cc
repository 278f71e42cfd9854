// Uses library internals (links sparsecoll_objects): the threshold estimators and the CPU kernels.
// estimator_perf: the statistical threshold estimators (SIDCo: sidco_exp, sidco_gp,
// sidco_gamma_gp; baselines dgc, redsync, gaussiank) - how close they get to the target count,
// and what they cost against exact top-k. Internal API (src/estimators, the CPU kernels).
//
// Mode "quality" (-m quality): for every input and target density delta (-D, default 0.1, 0.01,
// 0.001), C calls (-C, default 40) of the error-feedback loop a sparsifier runs on one rank:
//   acc = residual + g_c; t = estimator threshold for k = max(1, floor(delta n)) over acc;
//   selected = |acc| >= t (trimmed to exactly k when the estimator asks, as dgc and top-k);
//   residual = acc zeroed where selected; estimator.observe(k^, k); record k^/k.
// -E selects the input sequence:
//   1 (default): error feedback over training steps - per (model family, worker) the trace files
//     of its longest run of equally spaced iterations (CNN 1391-1400, LSTM 296-300: consecutive;
//     the unseen-model traces of scripts/estimators_unseen.sh: 10 steps apart) in order, cycled
//     over the calls, as a training loop feeds them; the residual carries over.
//   0: no residual (acc = g_c), every trace file on its own, its gradient at every call: the fit
//     on the raw gradient, with the stage search and feedback still reacting to k^/k.
//   2: error feedback on one trace file repeated at every call - a stress test, not a training
//     run: the residual grows linearly wherever nothing is selected, and releases bursts.
// Trace directories: -P (comma-separated; default tests/data/traces and tests/data/traces_lm). A
// file's model family is its name up to "_it" (fmnist_cnn_it01400_w0 -> fmnist_cnn).
// Target of the sidco_* rows on real traces: mean k^/k after 10 calls within 1 -+ -B (default 0.2).
// -R runs only the rows it names (comma-separated labels).
// Synthetic inputs (every mode): four distributions of n = 2^18 values (-N), freshly drawn at
// every call from seeded mt19937_64: Laplace(0, 1), gamma(0.5, 1) magnitudes, generalised
// Pareto (xi 0.2, sigma 1) magnitudes (random signs) and a Gaussian mixture
// 0.9 N(0, 1) + 0.1 N(0, 10^2).
// Rows: sidco_* with the library's defaults (adaptive stages, count feedback -G, default 0.25),
// sidco_*/fb0 (feedback off: the paper's estimator with our stage search), sidco_*/M1 (one stage,
// no feedback: the paper's single-stage estimator), dgc, redsync, gaussiank.
// Reported per (input, estimator, delta): mean and 5 %/95 % quantiles of k^/k over calls 11..C
// (after the first 10 calls, the paper's tolerance window), the mean over all calls, min and max.
// -S FILE writes every call's k^/k as CSV (input,estimator,density,call,ratio) for the plot
// (scripts/plot_estimators.py).
// Mode "cost" (-m cost): Laplace(0,1) float32 vectors of the sizes -b..-e (default 0.26M, 2.6M,
// 26M elements); per estimator the median time (-n iterations after -w warm-up) of estimation
// plus selection (selectAbove; the trim to k when asked), against exact top-k of the same k in the
// same run (the library's topk estimator: kthLargestAbs, then the same selection), and against
// the sort-based exact top-k the SIDCo paper compared with (|x| copied, std::nth_element or
// std::partial_sort on one thread, then the same selection).
// Targets (printed): every SIDCo variant >= 5x faster than exact top-k at 26M; every SIDCo
// variant's mean k^/k in [0.8, 1.2] after its first 10 calls on every real trace.
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
#include "estimator_bench.h"
#include "support/gradient_trace.h"

namespace sccl_perf {

double g_feedback_gain = sccl::EstimatorParams{}.sidco_feedback;  // -G

std::unique_ptr<sccl::ThresholdEstimator> makeEstimator(const EstimatorSetup& setup, double density,
                                                        size_t count) {
  sccl::EstimatorParams params;
  params.density = density;
  params.count = count;
  params.sidco_stages = setup.stages;
  params.sidco_feedback = setup.feedback < 0 ? g_feedback_gain : setup.feedback;
  std::unique_ptr<sccl::ThresholdEstimator> estimator;
  if (sccl::makeEstimator(setup.name, params, &estimator) != scclSuccess) {
    std::fprintf(stderr, "estimator %s: %s\n", setup.label.c_str(), scclGetLastError(nullptr));
    std::exit(1);
  }
  return estimator;
}

}  // namespace sccl_perf

namespace {

using namespace sccl_perf;

constexpr int kWarmCalls = 10;

// -E: 0 raw gradient (no residual), 1 error feedback over consecutive training steps, 2 error
// feedback on one gradient repeated at every call (a stress test: the residual grows linearly
// wherever nothing is selected).
enum class EfMode { Raw = 0, Consecutive = 1, Repeated = 2 };
EfMode g_ef_mode = EfMode::Consecutive;
double g_band = 0.2;                    // -B: the sidco_* target is 1 -+ g_band
std::vector<std::string> g_rows;        // -R: the rows run (all when empty)

bool wanted(const std::string& label) {
  return g_rows.empty() || std::find(g_rows.begin(), g_rows.end(), label) != g_rows.end();
}
const char* efModeName() {
  switch (g_ef_mode) {
    case EfMode::Raw: return "off (raw gradient)";
    case EfMode::Consecutive: return "on, consecutive training steps cycled";
    case EfMode::Repeated: return "on, one gradient repeated (stress)";
  }
  return "?";
}

// sidco_*: the library's defaults (adaptive stage count, count feedback at -G); /fb0: adaptive,
// feedback off (the paper's estimator with our stage search); /M1: one stage, no feedback (the
// paper's single-stage estimator).
std::vector<EstimatorSetup> qualitySetups() {
  return {{"sidco_exp", "sidco_exp"},
          {"sidco_gp", "sidco_gp"},
          {"sidco_gamma_gp", "sidco_gamma_gp"},
          {"sidco_exp/fb0", "sidco_exp", 0, 0.0},
          {"sidco_gp/fb0", "sidco_gp", 0, 0.0},
          {"sidco_gamma_gp/fb0", "sidco_gamma_gp", 0, 0.0},
          {"sidco_exp/M1", "sidco_exp", 1, 0.0},
          {"sidco_gp/M1", "sidco_gp", 1, 0.0},
          {"sidco_gamma_gp/M1", "sidco_gamma_gp", 1, 0.0},
          {"dgc", "dgc"},
          {"redsync", "redsync"},
          {"gaussiank", "gaussiank"}};
}

// One input of the quality study: its gradient at call c.
struct QualityInput {
  std::string label;
  std::string family;  // the trace file name up to "_it" (e.g. "fmnist_cnn"), or "synthetic"
  size_t count = 0;
  std::vector<std::vector<float>> calls;  // one gradient per call, or one for every call
  const std::vector<float>& gradient(int call) const {
    return calls.size() == 1 ? calls[0] : calls[size_t(call) % calls.size()];
  }
};

std::vector<float> drawSynthetic(const std::string& kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::gamma_distribution<double> gamma(0.5, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> x(n);
  for (float& v : x) {
    double magnitude = 0;
    if (kind == "laplace") {
      magnitude = -std::log1p(-uniform(rng));
    } else if (kind == "gamma") {
      magnitude = gamma(rng);
    } else if (kind == "gpareto") {
      magnitude = std::expm1(-0.2 * std::log1p(-uniform(rng))) / 0.2;  // xi 0.2, sigma 1
    } else {
      magnitude = std::fabs(normal(rng)) * (uniform(rng) < 0.1 ? 10.0 : 1.0);
    }
    v = static_cast<float>(rng() & 1 ? magnitude : -magnitude);
  }
  return x;
}

// Trace inputs. Raw (-E 0) and repeated (-E 2): one input per file, its gradient at every call.
// Consecutive (-E 1): one input per (family, worker), the files of its longest run of equally
// spaced iterations (at least two: CNN 1391-1400, LSTM 296-300; the later of equally long runs) in
// iteration order, cycled over the calls, as a training loop feeds them; files outside such a run
// are not used.
std::vector<QualityInput> loadTraceInputs(const std::vector<std::string>& dirs) {
  struct Loaded {
    std::string family, label;
    sccl_test::GradientTrace trace;
  };
  std::vector<Loaded> files;
  for (const std::string& dir : dirs) {
    for (const std::string& path : sccl_test::listGradientTraces(dir)) {
      Loaded file;
      std::string error;
      if (!sccl_test::loadGradientTrace(path, &file.trace, &error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        std::exit(1);
      }
      file.label = path.substr(path.find_last_of('/') + 1);
      file.label = file.label.substr(0, file.label.size() - 10);  // drop ".sccltrace"
      file.family = file.label.substr(0, file.label.rfind("_it"));
      files.push_back(std::move(file));
    }
  }
  std::sort(files.begin(), files.end(), [](const Loaded& x, const Loaded& y) {
    return std::tie(x.family, x.trace.worker, x.trace.iteration) <
           std::tie(y.family, y.trace.worker, y.trace.iteration);
  });
  std::vector<QualityInput> inputs;
  if (g_ef_mode != EfMode::Consecutive) {
    for (Loaded& file : files) {
      QualityInput input;
      input.label = file.label;
      input.family = file.family;
      input.count = file.trace.values.size();
      input.calls.push_back(std::move(file.trace.values));
      inputs.push_back(std::move(input));
    }
    return inputs;
  }
  for (size_t first = 0; first < files.size();) {
    size_t end = first + 1;  // [first, end): one family and worker
    while (end < files.size() && files[end].family == files[first].family &&
           files[end].trace.worker == files[first].trace.worker) {
      ++end;
    }
    size_t best_begin = first, best_length = 1;
    for (size_t run = first; run < end;) {
      const auto gap = [&](size_t i) {
        return int64_t{files[i].trace.iteration} - int64_t{files[i - 1].trace.iteration};
      };
      size_t next = run + 1;
      while (next < end && gap(next) >= 1 && gap(next) == gap(run + 1) &&
             files[next].trace.values.size() == files[run].trace.values.size()) {
        ++next;
      }
      if (next - run >= best_length) best_begin = run, best_length = next - run;
      // A run's last file may begin the next one (1, 100, 1391, 1392: 1391 is in both).
      run = next - run >= 2 ? next - 1 : next;
    }
    if (best_length >= 2) {
      const Loaded& head = files[best_begin];
      const Loaded& tail = files[best_begin + best_length - 1];
      QualityInput input;
      char label[96];
      const uint32_t stride = files[best_begin + 1].trace.iteration - head.trace.iteration;
      std::snprintf(label, sizeof(label), "%s_it%05u-%05u%s_w%u", head.family.c_str(),
                    head.trace.iteration, tail.trace.iteration,
                    stride > 1 ? ("x" + std::to_string(stride)).c_str() : "", head.trace.worker);
      input.label = label;
      input.family = head.family;
      input.count = head.trace.values.size();
      for (size_t i = best_begin; i < best_begin + best_length; ++i)
        input.calls.push_back(std::move(files[i].trace.values));
      inputs.push_back(std::move(input));
    }
    first = end;
  }
  return inputs;
}

std::vector<QualityInput> loadInputs(const std::vector<std::string>& dirs, size_t synthetic_n,
                                     int calls, uint64_t seed) {
  std::vector<QualityInput> inputs = loadTraceInputs(dirs);
  for (const char* kind : {"laplace", "gamma", "gpareto", "gmixture"}) {
    QualityInput input;
    input.label = std::string("synthetic_") + kind;
    input.family = "synthetic";
    input.count = synthetic_n;
    for (int c = 0; c < calls; ++c)
      input.calls.push_back(drawSynthetic(kind, synthetic_n, seed * 1000003 + uint64_t(c)));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

// Selection of the error-feedback loop: count of |acc| >= t, trimmed to k (ties at t dropped from
// the highest index, as the library) when exact; acc is zeroed where selected.
uint64_t selectAndZero(std::vector<float>& acc, double t, bool exact, uint64_t k) {
  uint64_t above = 0, at_or_above = 0;
  for (float v : acc) {
    const double m = std::fabs(double(v));
    if (!(m < t)) ++at_or_above;
    if (m > t) ++above;
  }
  if (!exact || at_or_above <= k) {
    for (float& v : acc)
      if (!(std::fabs(double(v)) < t)) v = 0;
    return at_or_above;
  }
  uint64_t ties_left = k > above ? k - above : 0, taken = 0;
  for (float& v : acc) {
    const double m = std::fabs(double(v));
    if (m > t || (m == t && ties_left > 0)) {
      if (!(m > t)) --ties_left;
      v = 0;
      ++taken;
    }
  }
  return taken;
}

struct QualityStats {
  double mean_after = 0, p5 = 0, p95 = 0, mean_all = 0, min = 0, max = 0;
};

QualityStats summarizeRatios(const std::vector<double>& ratios) {
  QualityStats s;
  std::vector<double> after(ratios.begin() + std::min<size_t>(kWarmCalls, ratios.size()),
                            ratios.end());
  if (after.empty()) after = ratios;
  for (double r : after) s.mean_after += r / double(after.size());
  for (double r : ratios) s.mean_all += r / double(ratios.size());
  std::sort(after.begin(), after.end());
  auto quantile = [&](double q) {
    return after[std::min(after.size() - 1,
                          size_t(std::floor(q * double(after.size() - 1) + 0.5)))];
  };
  s.p5 = quantile(0.05);
  s.p95 = quantile(0.95);
  s.min = *std::min_element(ratios.begin(), ratios.end());
  s.max = *std::max_element(ratios.begin(), ratios.end());
  return s;
}

int runQuality(const PerfOptions& options, const std::vector<std::string>& dirs, int calls,
               size_t synthetic_n, const std::string& series_path, const KeyValues& machine) {
  ResultTable table({{"input", "input", 28, 0},
                     {"family", "family", 12, 0},
                     {"estimator", "estimator", 18, 0},
                     {"density", "density", 8, 4},
                     {"k", "k", 7, -1},
                     {"mean>10", "mean_after_10", 8, 3},
                     {"p5", "p5", 7, 3},
                     {"p95", "p95", 7, 3},
                     {"mean", "mean_all", 8, 3},
                     {"min", "min", 8, 3},
                     {"max", "max", 8, 2},
                     {"target", "target", 6, 0}});
  KeyValues settings = {{"mode", "quality"},
                        {"error feedback", efModeName()},
                        {"sidco_feedback of the sidco_* rows", std::to_string(g_feedback_gain)},
                        {"calls", std::to_string(calls)},
                        {"target band", "1 -+ " + std::to_string(g_band)},
                        {"synthetic n", std::to_string(synthetic_n)},
                        {"seed", std::to_string(options.seed)}};
  std::printf("# estimator_perf quality: k^/k over %d error-feedback calls per input\n", calls);
  printKeyValues(stdout, machine);
  printKeyValues(stdout, settings);
  table.printHeader(stdout);
  FILE* series = series_path.empty() ? nullptr : std::fopen(series_path.c_str(), "w");
  if (series != nullptr) std::fprintf(series, "input,family,estimator,density,call,ratio\n");
  const std::vector<QualityInput> inputs = loadInputs(dirs, synthetic_n, calls, options.seed);
  // PASS/FAIL counts per row kind: the sidco_* defaults, /fb0, /M1.
  std::map<std::string, std::pair<int, int>> verdicts;
  for (const QualityInput& input : inputs) {
    for (double density : options.densities) {
      const uint64_t k = sccl::targetSelectionCount(density, input.count);
      for (const EstimatorSetup& setup : qualitySetups()) {
        if (!wanted(setup.label)) continue;
        watchdogKick(setup.label + " on " + input.label);
        auto estimator = makeEstimator(setup, density, input.count);
        std::vector<float> residual(input.count, 0.0f), acc(input.count);
        std::vector<double> ratios;
        for (int c = 0; c < calls; ++c) {
          const std::vector<float>& g = input.gradient(c);
          for (size_t i = 0; i < input.count; ++i) acc[i] = residual[i] + g[i];
          sccl::ThresholdQuery query;
          query.kernels = &sccl::cpuKernels();
          query.acc = acc.data();
          query.range = {0, input.count};
          query.k_target_local = k;
          query.iteration = uint64_t(c);
          double t = 0;
          if (estimator->threshold(query, &t) != scclSuccess || std::isnan(t)) {
            std::fprintf(stderr, "%s on %s: threshold failed or NaN\n", setup.label.c_str(),
                         input.label.c_str());
            return 1;
          }
          const uint64_t selected = selectAndZero(acc, t, estimator->exactCount(), k);
          if (g_ef_mode != EfMode::Raw) residual.swap(acc);
          estimator->observe(selected, k);
          ratios.push_back(double(selected) / double(k));
          if (series != nullptr) {
            std::fprintf(series, "%s,%s,%s,%g,%d,%.6g\n", input.label.c_str(), input.family.c_str(),
                         setup.label.c_str(), density, c + 1, ratios.back());
          }
        }
        const QualityStats s = summarizeRatios(ratios);
        const bool sidco = setup.name.rfind("sidco", 0) == 0;
        std::string target = "-";
        if (sidco && input.family != "synthetic") {
          const bool ok = s.mean_after >= 1 - g_band && s.mean_after <= 1 + g_band;
          target = ok ? "PASS" : "FAIL";
          const size_t slash = setup.label.find('/');
          const std::string kind = slash == std::string::npos
                                       ? "sidco_* (defaults)"
                                       : "sidco_*" + setup.label.substr(slash);
          (ok ? verdicts[kind].first : verdicts[kind].second)++;
        }
        table.addRow({input.label, input.family, setup.label, density, double(k), s.mean_after, s.p5, s.p95,
                      s.mean_all, s.min, s.max, target},
                     stdout);
      }
    }
  }
  if (series != nullptr) std::fclose(series);
  for (const auto& [kind, counts] : verdicts) {
    std::printf(
        "# target (mean k^/k after %d calls in [%g, %g] on every real trace), %s: "
        "%d PASS, %d FAIL\n",
        kWarmCalls, 1 - g_band, 1 + g_band, kind.c_str(), counts.first, counts.second);
  }
  if (!options.json_path.empty() &&
      !table.writeJson(options.json_path, "estimator_perf", machine, settings)) {
    std::fprintf(stderr, "cannot write %s\n", options.json_path.c_str());
    return 1;
  }
  return 0;
}

std::vector<std::string> splitCommas(const char* text) {
  std::vector<std::string> parts;
  std::string current;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p == ',') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += *p;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = 1040000;    // 260,000 float32
  options.max_size = 104000000;  // 26,000,000 float32
  options.step_factor = 10;
  options.iters = 5;
  options.warmup = 1;
  options.densities = {0.1, 0.01, 0.001};
  std::string mode = "quality", series_path;
  std::vector<std::string> dirs = {"tests/data/traces", "tests/data/traces_lm"};
  int calls = 40;
  size_t synthetic_n = size_t{1} << 18;
  std::vector<ExtraFlag> extra = {
      {'m', "MODE   quality (k^/k on traces and synthetic data, default) or cost (time vs top-k)",
       [&](const char* text) {
         mode = text;
         return mode == "quality" || mode == "cost";
       }},
      {'P', "DIRS   comma-separated trace directories (quality)",
       [&](const char* text) { return !(dirs = splitCommas(text)).empty(); }},
      {'C', "N      calls per input (quality, default 40)",
       [&](const char* text) { return (calls = std::atoi(text)) > 0; }},
      {'N', "N      elements of the synthetic inputs (quality, default 262144)",
       [&](const char* text) { return parseSize(text, &synthetic_n) && synthetic_n > 0; }},
      {'G', "GAIN   sidco_feedback of the sidco_* rows (default: the library's, 0.25)",
       [&](const char* text) {
         g_feedback_gain = std::atof(text);
         return g_feedback_gain >= 0 && g_feedback_gain <= 1;
       }},
      {'E', "0|1|2  error feedback: 0 off, 1 consecutive steps (default), 2 repeated gradient",
       [&](const char* text) {
         const int mode_value = std::atoi(text);
         g_ef_mode = static_cast<EfMode>(mode_value);
         return mode_value >= 0 && mode_value <= 2;
       }},
      {'B', "X      half-width of the sidco_* target band 1 -+ X (quality, default 0.2)",
       [&](const char* text) {
         g_band = std::atof(text);
         return g_band > 0 && g_band < 1;
       }},
      {'R', "ROWS   comma-separated rows to run, e.g. sidco_exp,sidco_exp/fb0,dgc (quality)",
       [&](const char* text) {
         g_rows = splitCommas(text);
         const std::vector<EstimatorSetup> setups = qualitySetups();
         for (const std::string& row : g_rows) {
           const bool known = std::any_of(setups.begin(), setups.end(), [&](const auto& setup) {
             return setup.label == row;
           });
           if (!known) {
             std::fprintf(stderr, "-R: no row named '%s'\n", row.c_str());
             return false;
           }
         }
         return !g_rows.empty();
       }},
      {'S', "FILE   per-call k^/k as CSV (quality)",
       [&](const char* text) { return !(series_path = text).empty(); }}};
  int exit_code = 0;
  if (!parseOptions(argc, argv, "statistical threshold estimators: quality and cost", extra,
                    &options, &exit_code)) {
    return exit_code;
  }
  const KeyValues machine = machineDescription(options);
  if (mode == "cost") return runCost(options, machine);
  return runQuality(options, dirs, calls, synthetic_n, series_path, machine);
}
