// sparse_allreduce_perf: scclSparseAllreduce of every preset against the dense all-reduce, in
// the manner of nccl-tests (flags, columns, -c check, #wrong, -J JSON).
//
// For each size and density ("block") every algorithm gets its own sparsifier, fed the same
// synthetic gradients (sparse/inputs.h: Laplace values from (seed, rank, iteration, index)):
//   1. warm-up, one algorithm after the other: dense -w calls; a sparse algorithm at least -W,
//      then more until its k' has settled, at most -L. Error feedback keeps growing the
//      accumulated values for tens of calls (hundreds at density 0.001) and the threshold has to
//      follow them: with the default proportional scaling rule k' settles within tens of calls on
//      these inputs, with the papers' band rule (0.5 % per call) only after hundreds;
//   2. -n timed rounds; a round calls every algorithm once, each after a barrier (interleaved,
//      so a burst of load from elsewhere hits all algorithms, and their ratio to dense stays
//      fair); the first round in the rows' order, every later one in a shuffled order, the same
//      on every rank (roundOrder, common/timing.h), so that no row always follows the same one:
//      on the emulated cluster's shaped links a row after a long local computation started with a
//      full token bucket (1 MB at line rate) in every round, one after dense with an empty one;
//   3. with -c, the check pass (sparse/check.h) on fresh sparsifiers;
//   4. for sketch rows (s2, and the -S lambda sweep rows s2:<lambda>), the decode error: fresh
//      sparsifiers without error feedback, three calls, ||out - exact sum of the marked
//      gradients|| / ||exact sum|| (column err; untimed).
// Inputs: -I laplace (dense Laplace gradients), -I embedding (Zipf-touched embedding rows of -R
// elements, the S2 Reducer's setting; sparse/inputs.h) or -I trace:DIR (real gradients of
// data-parallel workers from trace files; sparse/trace_inputs.h).
// The library's own statistics (scclSparseStats_t) give k', bytes, f(t) and the time split.
// -g 1 (sparse/device_calls.h): one rank per GPU over the NCCL transport, the same host-generated
// gradients copied to device buffers before each call (untimed), each call timed with CUDA events
// on the rank's stream; rows: the dense all-reduce (scclAllReduce) and the presets with a device
// path (every preset, micro_sync_free, exdyna_sync_free), and the graph replay rows
// micro_sync_free:graph and exdyna_sync_free:graph: the preset stream-ordered (streamOrdered = 1),
// its first call eager, the second captured in a CUDA graph, every later one a launch of that graph
// between the events, so one run shows what capture buys against the eager call. The host
// only enqueues a stream-ordered call, so the library's time split of those rows is '-'. The check
// pass copies the output back to the host.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#if SCCL_PERF_WITH_CUDA
#include "common/cuda_device.h"
#endif
#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/team.h"
#include "common/timing.h"
#include "common/watchdog.h"
#include "sparse/bench.h"
#include "sparse/check.h"
#include "sparse/device_calls.h"
#include "sparse/inputs.h"
#include "sparse/launch.h"
#include "sparse/peers.h"
#include "sparse/run_settings.h"

namespace {

using namespace sccl_perf;

// One algorithm in one block. Sums run over the timed calls of this rank.
struct AlgorithmRun {
  std::string name;
  std::string chosen;  // the "auto" row: the preset the library chose (scclSparsifierGetAlgorithm)
  size_t count = 0;  // elements of the block
  Sparsifier sp{nullptr, &scclSparsifierDestroy};
  bool graph = false;         // -g 1 graph replay row: every call through DeviceCalls::replay
  bool enqueue_only = false;  // -g 1 stream-ordered call: the library cannot time its parts
  uint64_t calls = 0;         // calls made so far: the gradient iteration of the next one
  uint64_t warmup_calls = 0;
  double creation_us = -1, first_call_us = -1;  // sparse rows: this rank's (-P 1)
  std::vector<double> samples_us;
  double density = 0, inflation = 0, sent = 0, received = 0;
  double select_us = 0, comm_us = 0, other_us = 0;
};

// One row as printed: combined over ranks.
struct Row {
  std::string name;
  std::string preset;  // what ran: the name, or for "auto" the chosen preset
  std::string label;   // as printed: the name, or auto:<preset>
  uint64_t warmup_calls = 0, wrong = 0;
  double creation_us = -1, first_call_us = -1;  // slowest rank's; -1: an all-reduce row
  double time_us = 0, density = 0, inflation = 0, sent = 0, received = 0;
  double select_us = 0, comm_us = 0, other_us = 0;
  // The slowest rank's median over the fastest rank's. A call that ends in local work after its
  // last collective (S2's decode) ends at a different time on every rank, and time_us is the
  // slowest rank's: on ranks sharing cores this spread, not the mean of the phases, decides it.
  double rank_spread = 1;
  double decode_error = -1;   // sketch rows only
  bool enqueue_only = false;  // select/comm/other print '-' (AlgorithmRun::enqueue_only)
};

// Per-algorithm sums for the footer.
struct Totals {
  int rows = 0, speedup_rows = 0;
  int selecting_rows = 0;  // rows that selected (f(t) applies; an "auto" row may have run dense)
  double time_us = 0, speedup = 0, density_ratio = 0, inflation = 0, sent = 0, error = 0;
};

InputShape inputShape(const SparseOptions& o, const Rank& r) {
  InputShape shape;
  shape.embedding = o.embedding;
  shape.row_width = o.row_width;
  shape.nranks = r.nranks;
  shape.traces = o.traces.get();
  return shape;
}

struct RankState {
  const SparseOptions& options;
  const Rank& rank;
  ThreadTeam team;
  GradientPool pool;
  std::unique_ptr<unsigned char[]> recv;
  ResultTable table;
  std::map<std::string, Totals> totals;
  uint64_t wrong = 0;
  std::unique_ptr<DeviceCalls> device;  // -g 1; null on the host path

  RankState(const SparseOptions& o, const Rank& r, int threads)
      : options(o),
        rank(r),
        team(threads),
        pool(o.common.seed, r.rank, o.common.dtype, inputShape(o, r)),
        table(tableColumns(algorithmWidth(o))) {}

  // 14, or the longest row name (the sync-free presets' are longer).
  static int algorithmWidth(const SparseOptions& o) {
    size_t width = 14;
    for (const std::string& name : o.algorithms) {
      // auto:<preset>, the longest candidate being exdyna
      width = std::max(width, name == kAutoRow ? std::strlen("auto:exdyna") : name.size());
    }
    return int(width);
  }

  static std::vector<Column> tableColumns(int algorithm_width) {
    return {{"size(B)", "size_bytes", 11, -1},
            {"count", "count", 10, -1},
            {"type", "type", 8, 0},
            {"redop", "redop", 5, 0},
            {"algorithm", "algorithm", algorithm_width, 0},
            {"density", "target_density", 7, 4},
            {"actual", "actual_density", 8, 5},
            {"warmup", "warmup_calls", 6, -1},
            {"time(us)", "time_us", 10, 1},
            {"algbw", "algbw_gbps", 6, 2},
            {"speedup", "speedup_vs_dense", 7, 2},
            {"sent(B)", "bytes_sent", 11, -1},
            {"recv(B)", "bytes_received", 11, -1},
            {"f(t)", "gather_inflation", 5, 2},
            {"err", "decode_error", 7, 4},
            {"select", "select_us", 9, 1},
            {"comm", "comm_us", 9, 1},
            {"other", "other_us", 9, 1},
            {"spread", "rank_spread", 6, 2},
            {"#wrong", "wrong", 6, -1}};
  }
};

// True for rows that are a dense all-reduce outside scclSparseAllreduce: the peers, and on the
// device path the dense row (scclAllReduce: the dense preset has no device path).
bool isAllReduceRow(const RankState& s, const AlgorithmRun& run) {
  return isPeer(run.name) || (s.device != nullptr && run.name == "dense");
}

// One call of the row on the gradient of its next iteration, after a barrier of all ranks when
// `barrier_first`. Returns its time in microseconds: the wall clock around the call on the host
// path; on the device path (-g 1) CUDA events around it on the rank's stream (around the graph's
// launch for a graph replay row), the gradient having been copied to the GPU before the barrier.
double callOnce(RankState& s, AlgorithmRun& run, size_t count, bool barrier_first) {
  const void* gradient = s.pool.iteration(run.calls);
  ++run.calls;
  if (s.device != nullptr) {
    s.device->upload(gradient);
    if (barrier_first) s.rank.barrier();
    if (run.graph) return s.device->replay(run.sp.get(), s.options.op, s.rank.comm);
    return s.device->call(run.sp.get(), s.options.op, s.rank.comm);  // sp null: scclAllReduce
  }
  if (barrier_first) s.rank.barrier();
  const double start = nowMicroseconds();
  if (isPeer(run.name)) {
    runPeer(run.name, gradient, s.recv.get(), count, s.options.common.dtype, s.options.op);
  } else {
    check(scclSparseAllreduce(gradient, s.recv.get(), count, s.options.common.dtype, s.options.op,
                              run.sp.get(), s.rank.comm, nullptr),
          s.rank.comm, "scclSparseAllreduce");
  }
  return nowMicroseconds() - start;
}

scclSparseStats_t statsOf(const RankState& s, const AlgorithmRun& run) {
  scclSparseStats_t stats{};
  stats.size = sizeof(stats);
  if (isAllReduceRow(s, run)) {
    // A dense all-reduce: everything selected; the bandwidth-optimal bytes of a ring.
    const uint64_t bytes = uint64_t(run.count) * dtypeSize(s.options.common.dtype);
    const uint64_t n = uint64_t(s.rank.nranks);
    stats.density = 1;
    stats.gatherInflation = 1;
    stats.bytesSent = stats.bytesReceived = n > 1 ? bytes * 2 * (n - 1) / n : 0;
    return stats;
  }
  check(scclSparsifierGetStats(run.sp.get(), &stats), s.rank.comm, "scclSparsifierGetStats");
  return stats;
}

// k' has settled when the means of the last two 10-call windows differ by at most 2 % (or three
// standard deviations of a Poisson count, for small k'), and, for the scaling estimator, the last
// mean lies inside its band [k / beta, k * beta]. k' is the same on every rank, so every rank
// stops after the same call.
bool settled(const std::vector<double>& k_global, double k_target, double band) {
  constexpr size_t kWindow = 10;
  if (k_global.size() < 2 * kWindow) return false;
  double recent = 0, before = 0;
  for (size_t i = 0; i < kWindow; ++i) {
    recent += k_global[k_global.size() - 1 - i] / kWindow;
    before += k_global[k_global.size() - 1 - kWindow - i] / kWindow;
  }
  const double tolerance = std::max(0.02, 3 * std::sqrt(0.2 / std::max(recent, 1.0)));
  if (std::fabs(recent - before) > tolerance * std::max(recent, before)) return false;
  return band <= 0 || (recent <= k_target * band && recent * band >= k_target);
}

// Calls a sparse algorithm until k' has settled: at least -W calls, at most -L.
void runUntilSettled(RankState& s, AlgorithmRun& run, size_t count,
                     const scclSparseConfig_t& config) {
  const SparseOptions& o = s.options;
  const double band = estimatorOf(config) == "scaling" ? config.scalingBand : 0;
  const uint64_t limit = uint64_t(std::max(o.sparse_warmup, o.warmup_limit));
  std::vector<double> k_global;
  while (run.calls < limit) {
    callOnce(s, run, count, false);
    const scclSparseStats_t stats = statsOf(s, run);
    k_global.push_back(double(stats.kGlobal));
    if (run.calls >= uint64_t(o.sparse_warmup) && settled(k_global, double(stats.kTarget), band))
      break;
  }
}

// "auto" may change its preset after measured calls (SCCL_AUTO_RETUNE): more warm-up calls until
// it settled (autoSettled; at most kAutoSettleCalls), so that the timed calls run the preset it
// keeps. The row is then labelled with that preset; a note names the creation's choice.
void settleAuto(RankState& s, AlgorithmRun& run, size_t count) {
  constexpr uint64_t kAutoSettleCalls = 64;
  const std::string created = run.chosen;
  for (uint64_t extra = 0; extra < kAutoSettleCalls && statsOf(s, run).autoSettled == 0; ++extra)
    callOnce(s, run, count, false);
  const scclSparseStats_t stats = statsOf(s, run);
  const char* now = nullptr;
  check(scclSparsifierGetAlgorithm(run.sp.get(), &now), s.rank.comm,
        "scclSparsifierGetAlgorithm");
  run.chosen = now;
  if (s.rank.rank == 0 && (stats.autoSwitches > 0 || stats.autoSettled == 0)) {
    std::printf("# auto at %zu elements: chose %s at creation, runs %s after %llu calls (%llu "
                "switch(es)%s)\n",
                count, created.c_str(), run.chosen.c_str(),
                static_cast<unsigned long long>(run.calls),
                static_cast<unsigned long long>(stats.autoSwitches),
                stats.autoSettled ? "" : ", not settled");
  }
}

// Creates the row's sparsifier and warms it up: dense -w calls, a sparse algorithm until k'
// settles.
void prepare(RankState& s, AlgorithmRun& run, size_t count, double density) {
  const SparseOptions& o = s.options;
  run.count = count;
  watchdogKick("warm-up of " + run.name + ", " + std::to_string(count) + " elements, density " +
               std::to_string(density));
  const scclSparseConfig_t config = rowConfig(o, run.name, density);
  run.graph = s.device != nullptr && isGraphReplayRow(run.name);
  run.enqueue_only = s.device != nullptr && config.streamOrdered != 0 && !isAllReduceRow(s, run);
  if (isAllReduceRow(s, run)) {
    if (isPeer(run.name) && !peerAvailable(run.name))
      throw RankError(run.name + " is not available in this build");
    while (run.calls < uint64_t(o.common.warmup)) callOnce(s, run, count, false);
    run.warmup_calls = run.calls;
    return;
  }
  // -P 1: from the moment every rank is here, so that the creation's call agreement does not
  // count a late rank's start-up.
  if (o.print_setup) s.rank.barrier();
  const double creation_start = nowMicroseconds();
  run.sp = createSparsifier(s.rank, count, o.common.dtype, config);
  run.creation_us = nowMicroseconds() - creation_start;
  // The first call: on device buffers it may move auto to a preset with a device path (the
  // creation may choose dense, which has none), so the row is named after it.
  run.first_call_us = callOnce(s, run, count, false);
  std::string preset = run.name;
  if (run.name == kAutoRow) {
    const char* chosen = nullptr;
    check(scclSparsifierGetAlgorithm(run.sp.get(), &chosen), s.rank.comm,
          "scclSparsifierGetAlgorithm");
    run.chosen = chosen;
    preset = run.chosen;
  }
  if (preset == "dense") {
    while (run.calls < uint64_t(o.common.warmup)) callOnce(s, run, count, false);
  } else {
    runUntilSettled(s, run, count, rowConfig(o, preset, density));
  }
  // A graph row's first call is eager and its second is captured: every timed call a replay.
  while (run.graph && run.calls < 2) callOnce(s, run, count, false);
  if (run.name == kAutoRow) settleAuto(s, run, count);
  run.warmup_calls = run.calls;
}

void timedRounds(RankState& s, std::vector<AlgorithmRun>& runs, size_t count) {
  for (int iter = 0; iter < s.options.common.iters; ++iter) {
    watchdogKick("timed round " + std::to_string(iter) + " at " + std::to_string(count) +
                 " elements");
    for (size_t index : roundOrder(runs.size(), uint64_t(iter))) {
      AlgorithmRun& run = runs[index];
      run.samples_us.push_back(callOnce(s, run, count, true));
      const scclSparseStats_t stats = statsOf(s, run);  // after the clock stopped
      run.density += stats.density;
      run.inflation += stats.gatherInflation;
      run.sent += double(stats.bytesSent);
      run.received += double(stats.bytesReceived);
      run.select_us += stats.timeSelectUs;
      run.comm_us += stats.timeCommUs;
      run.other_us += stats.timeOtherUs;
    }
  }
  // The sums above are divided by -n: a round order that skipped or repeated a row would report
  // wrong means, not just noisier ones.
  for (const AlgorithmRun& run : runs) {
    if (run.samples_us.size() != size_t(s.options.common.iters))
      throw RankError(run.name + ": " + std::to_string(run.samples_us.size()) +
                      " timed calls, not " + std::to_string(s.options.common.iters));
  }
}

// Time: max over ranks of each rank's median (the spread: over the min); bytes and the split:
// mean over ranks and calls; density and f(t) are global figures, the same on every rank.
Row combine(RankState& s, const AlgorithmRun& run) {
  const double iters = s.options.common.iters;
  std::vector<double> all =
      s.rank.allGather({summarize(run.samples_us).median_us, run.sent, run.received, run.select_us,
                        run.comm_us, run.other_us, run.creation_us, run.first_call_us});
  Row row;
  row.name = run.name;
  row.preset = run.chosen.empty() ? run.name : run.chosen;
  row.label = run.chosen.empty() ? run.name : run.name + ":" + run.chosen;
  row.enqueue_only = run.enqueue_only;
  row.warmup_calls = run.warmup_calls;
  row.density = run.density / iters;
  row.inflation = run.inflation / iters;
  const double per_rank_call = iters * s.rank.nranks;
  double fastest_us = all[0];
  for (size_t r = 0; r < all.size(); r += 8) {
    row.time_us = std::max(row.time_us, all[r]);
    row.creation_us = std::max(row.creation_us, all[r + 6]);  // -1 on every rank or on none
    row.first_call_us = std::max(row.first_call_us, all[r + 7]);
    fastest_us = std::min(fastest_us, all[r]);
    row.sent += all[r + 1] / per_rank_call;
    row.received += all[r + 2] / per_rank_call;
    row.select_us += all[r + 3] / per_rank_call;
    row.comm_us += all[r + 4] / per_rank_call;
    row.other_us += all[r + 5] / per_rank_call;
  }
  row.rank_spread = fastest_us > 0 ? row.time_us / fastest_us : 1;
  return row;
}

void printRow(RankState& s, size_t count, double density, const Row& row, const Row* dense) {
  const SparseOptions& o = s.options;
  const double bytes = double(count * dtypeSize(o.common.dtype));
  const bool is_dense = row.preset == "dense" || isPeer(row.name);  // nothing is selected
  const double speedup = dense != nullptr && row.time_us > 0 ? dense->time_us / row.time_us : 0;
  // Target density and f(t) mean nothing for dense (its k_i = count on every rank).
  auto split = [&](double us) { return row.enqueue_only ? Cell("-") : Cell(us); };
  s.table.addRow(
      {bytes, double(count), dtypeName(o.common.dtype), o.op == scclAvg ? "avg" : "sum", row.label,
       is_dense ? Cell("-") : Cell(density), row.density, double(row.warmup_calls), row.time_us,
       gigabytesPerSecond(bytes, row.time_us), dense != nullptr ? Cell(speedup) : Cell("-"),
       row.sent, row.received, is_dense ? Cell("-") : Cell(row.inflation),
       row.decode_error >= 0 ? Cell(row.decode_error) : Cell("-"), split(row.select_us),
       split(row.comm_us), split(row.other_us), row.rank_spread,
       o.common.check ? Cell(double(row.wrong)) : Cell("N/A")},
      stdout);
  Totals& t = s.totals[row.name];
  t.rows += 1;
  t.time_us += row.time_us;
  t.speedup_rows += dense != nullptr ? 1 : 0;
  t.speedup += speedup;
  t.density_ratio += is_dense ? 1.0 : row.density / density;
  if (!is_dense) {
    t.inflation += row.inflation;
    t.selecting_rows += 1;
  }
  t.sent += row.sent;
  t.error += std::max(0.0, row.decode_error);
}

// -P 1: what creating each sparse row's sparsifier and making its first call cost.
void printSetup(size_t count, double density, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    if (row.creation_us < 0) continue;
    std::printf("# setup of %s at %zu elements, density %g (slowest rank): creation %.2f ms, "
                "first call %.2f ms, together %.2f ms\n",
                row.label.c_str(), count, density, row.creation_us * 1e-3,
                row.first_call_us * 1e-3, (row.creation_us + row.first_call_us) * 1e-3);
  }
}

void runBlock(RankState& s, size_t count, double density) {
  const SparseOptions& o = s.options;
  const double scale = gradientScale(count, density);
  s.pool.generate(s.team, count, scale, density);
  if (s.device != nullptr) s.device->allocate(count, o.common.dtype);
  std::vector<AlgorithmRun> runs(o.algorithms.size());
  for (size_t a = 0; a < runs.size(); ++a) {
    runs[a].name = o.algorithms[a];
    prepare(s, runs[a], count, density);
  }
  timedRounds(s, runs, count);
  std::vector<Row> rows;
  for (const AlgorithmRun& run : runs) rows.push_back(combine(s, run));
  if (s.device != nullptr) s.device->releaseGraphs();  // before the sparsifiers they replay go
  runs.clear();  // frees the residuals before the check pass creates its sparsifiers
  for (Row& row : rows) {
    if (isPeer(row.name)) continue;        // another library's summation order: not modelled
    DeviceCalls* device = s.device.get();  // -g 1: the checked call runs on the GPU
    const CheckCase c{o, s.rank, count, density, scale, row.preset, s.pool, s.recv.get(), device};
    if (o.common.check) {
      row.wrong = checkFirstCall(c);
      s.wrong += row.wrong;
    }
    if (isSketchRow(row.preset)) row.decode_error = sketchDecodeError(c, 3);
  }
  if (s.rank.rank != 0) return;
  const Row* dense = nullptr;
  for (const Row& row : rows) dense = row.name == "dense" ? &row : dense;
  for (const Row& row : rows) printRow(s, count, density, row, dense);
  if (o.print_setup) printSetup(count, density, rows);
}

void printFooter(RankState& s) {
  std::printf("# averages over the sizes and densities:\n");
  for (const std::string& name : s.options.algorithms) {
    const Totals& t = s.totals[name];
    if (t.rows == 0) continue;
    char inflation[16] = "    -";  // dense selects nothing, so f(t) does not apply
    if (t.selecting_rows > 0)
      std::snprintf(inflation, sizeof(inflation), "%5.2f", t.inflation / t.selecting_rows);
    char error[32] = "";
    if (isSketchRow(name)) std::snprintf(error, sizeof(error), "  err %.4f", t.error / t.rows);
    std::printf(
        "#   %-*s time %12.1f us  speedup %6.2f  actual/target %7.3f  f(t) %s  "
        "sent %12.0f B%s\n",
        RankState::algorithmWidth(s.options), name.c_str(), t.time_us / t.rows,
        t.speedup_rows ? t.speedup / t.speedup_rows : 0, t.density_ratio / t.rows, inflation,
        t.sent / t.rows, error);
  }
  std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(s.wrong),
              s.wrong ? "FAILED" : "OK");
}

int runRank(const SparseOptions& o, const Rank& rank) {
  const char* transport_name = "unknown";
  check(scclCommTransportName(rank.comm, &transport_name), rank.comm, "scclCommTransportName");
  const std::string transport = transport_name;
  // In-process ranks are threads already; a helper team each would only oversubscribe.
  const bool threads = rank.in_process || transport == "local";
  RankState s(o, rank, threads ? 1 : kernelThreads(o.common));
#if SCCL_PERF_WITH_CUDA
  if (o.common.device) s.device = openDeviceCalls();
#endif
  const std::vector<size_t> counts = elementCounts(o.common);
  s.recv.reset(new unsigned char[counts.back() * dtypeSize(o.common.dtype)]);
  KeyValues machine, settings;
  if (rank.rank == 0) {
    machine = machineDescription(o.common);
    settings = runSettings(o, rank, transport, s.device ? s.device->describe() : "");
    if (s.device != nullptr) {
      std::printf(
          "# sparse_allreduce_perf -g 1: sparse all-reduce of GPU buffers vs dense; times are "
          "CUDA-event times\n");
    } else {
      std::printf("# sparse_allreduce_perf: sparse all-reduce of every preset vs dense\n");
    }
    printKeyValues(stdout, machine);
    printKeyValues(stdout, settings);
    printLegend(s.device != nullptr);
    s.table.printHeader(stdout);
  }
  for (size_t count : counts) {
    for (double density : o.common.densities) runBlock(s, count, density);
  }
  if (rank.rank != 0) return s.wrong ? 1 : 0;
  printFooter(s);
  if (!o.common.json_path.empty() &&
      !s.table.writeJson(o.common.json_path, "sparse_allreduce_perf", machine, settings)) {
    std::fprintf(stderr, "cannot write %s\n", o.common.json_path.c_str());
    return 1;
  }
  return s.wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  SparseOptions options;
  int exit_code = 0;
  if (!parseSparseOptions(argc, argv, &options, &exit_code)) return exit_code;
  for (double lambda : options.sketch_lambdas) {
    char name[32];
    std::snprintf(name, sizeof(name), "s2:%g", lambda);
    options.algorithms.push_back(name);
  }
  if (elementCounts(options.common).empty() || dtypeSize(options.common.dtype) == 0) {
    std::fprintf(stderr, "no element count in the size range\n");
    return 2;
  }
  const RankBody body = [&](const Rank& rank) { return runRank(options, rank); };
  if (!options.common.device) {
    if (!planHostRun(&options)) return 2;
    return launchRanks(options, body);
  }
#if SCCL_PERF_WITH_CUDA
  // -g 1: a machine without a usable GPU is a skip (exit 77), before anything else runs.
  const int devices = usableCudaDevices("sparse_allreduce_perf");
  if (devices == 0) return kSkipExitCode;
  if (!planDeviceRun(devices, &options)) return 2;
  const DeviceLaunch device{selectRankDevice};
  return launchRanks(options, body, &device);
#else
  std::fprintf(stderr, "sparse_allreduce_perf: -g 1 needs a build with the CUDA kernels (nvcc)\n");
  return 2;
#endif
}
