// event_exchange_perf: one EventGraD pass (scclEventCommStep) against the dense all-reduce that
// data-parallel SGD would run instead, at chosen event fractions.
//
// The parameter buffer (count elements of float32, split into -k near-equal tensors) is rewritten
// before every pass (untimed) so that exactly the chosen fraction q of tensors fires: every
// element of tensor t on rank r holds v = r + 1 + (number of passes so far in which t fired), and
// t fires in pass p when p == 0 or hash(seed, t, p) < q, with a static threshold of 0.5 (the norm
// moves by sqrt(size) >= 1 on a firing pass and not at all otherwise). Ranks: -r N threads
// (transport local) or one per process under mpirun (transport mpi, one-sided MPI RMA).
//
// Columns: the median time of a pass (max over ranks), its parts from the event communicator's
// statistics (put, barrier, read, average; means per pass, max over ranks), the bytes one rank
// puts per pass, the measured message fraction, the dense all-reduce of the same buffer (avg) and
// the ratio. With -c 1 (default) every pass of the synchronous mode is verified bitwise on every
// rank against the average computed here from the scripted values; a wrong element exits 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef SCCL_PERF_WITH_MPI
#include <mpi.h>
#endif

#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/timing.h"
#include "common/watchdog.h"
#include "sparsecoll/sparsecoll.h"

namespace {

using namespace sccl_perf;

struct EventOptions {
  PerfOptions common;
  int tensors = 8;                                      // -k
  std::vector<double> fractions = {0, 0.25, 0.5, 1.0};  // -q
  int local_ranks = 4;                                  // -r
  int synchronous = 1;                                  // -S
  bool force_mpi = false;                               // -M
};

struct RankFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(scclResult_t result, scclComm_t comm, const char* what) {
  if (result != scclSuccess) {
    throw RankFailure(std::string(what) + ": " + scclGetErrorString(result) + " (" +
                      scclGetLastError(comm) + ")");
  }
}

bool fires(uint64_t seed, size_t tensor, uint64_t pass, double fraction) {
  if (pass == 0) return true;
  uint64_t x =
      seed * 0x9e3779b97f4a7c15ull + tensor * 0xbf58476d1ce4e5b9ull + pass * 0x94d049bb133111ebull;
  x = (x ^ (x >> 31)) * 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  return double(x >> 11) / double(uint64_t{1} << 53) < fraction;
}

std::vector<int> ringOf(int rank, int nranks) {
  std::vector<int> out;
  if (nranks > 1) out.push_back((rank + nranks - 1) % nranks);
  if (nranks > 2) out.push_back((rank + 1) % nranks);
  std::sort(out.begin(), out.end());
  return out;
}

// The scripted run of one row: the value of every (rank, tensor) in the current pass and the one
// last sent.
struct Script {
  Script(int nranks, size_t ntensors) : value(nranks, std::vector<double>(ntensors)), sent(value) {
    for (int r = 0; r < nranks; ++r) std::fill(value[r].begin(), value[r].end(), double(r + 1));
  }
  void advance(uint64_t seed, uint64_t pass, double fraction) {
    for (size_t t = 0; t < value[0].size(); ++t) {
      if (!fires(seed, t, pass, fraction)) continue;
      for (size_t r = 0; r < value.size(); ++r) {
        if (pass > 0) value[r][t] += 1.0;
        sent[r][t] = value[r][t];
      }
    }
  }
  std::vector<std::vector<double>> value, sent;
};

struct RowResult {
  double pass_us = 0, put_us = 0, sync_us = 0, read_us = 0, average_us = 0;
  double bytes_per_pass = 0, message_fraction = 0, allreduce_us = 0;
  uint64_t wrong = 0;
};

RowResult runRow(scclComm_t comm, int rank, int nranks, const EventOptions& o, size_t count,
                 double fraction) {
  const size_t k = std::min<size_t>(size_t(o.tensors), count);
  std::vector<size_t> sizes(k), offsets(k);
  for (size_t t = 0; t < k; ++t) {
    offsets[t] = count * t / k;
    sizes[t] = count * (t + 1) / k - offsets[t];
  }
  scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
  config.thresholdMode = scclEventThresholdStatic;
  config.staticThreshold = 0.5;
  config.initialPasses = 0;
  config.synchronous = o.synchronous;
  scclEventComm_t ec = nullptr;
  check(scclEventCommCreate(&ec, comm, count, scclFloat32, sizes.data(), int(k), nullptr, 0,
                            nullptr, &config),
        comm, "scclEventCommCreate");
  std::vector<float> x(count);
  Script script(nranks, k);
  const std::vector<int> ring = ringOf(rank, nranks);
  const double w = 1.0 / double(ring.size() + 1);
  const bool verify = o.common.check != 0 && o.synchronous == 1;
  RowResult row;
  std::vector<double> samples;
  const int passes = o.common.warmup + o.common.iters;
  for (int p = 0; p < passes; ++p) {
    script.advance(o.common.seed, uint64_t(p), fraction);
    for (size_t t = 0; t < k; ++t)
      std::fill(x.begin() + long(offsets[t]), x.begin() + long(offsets[t] + sizes[t]),
                float(script.value[rank][t]));
    check(scclBarrier(comm), comm, "scclBarrier");
    double start = nowMicroseconds();
    check(scclEventCommStep(ec, x.data(), count, scclFloat32, nullptr), comm, "scclEventCommStep");
    double elapsed = nowMicroseconds() - start;
    if (p >= o.common.warmup) samples.push_back(elapsed);
    if (!verify) continue;
    for (size_t t = 0; t < k; ++t) {
      double own = double(float(script.value[rank][t]));
      double acc = w * own;
      for (int j : ring) acc += w * double(float(script.sent[size_t(j)][t]));
      float want = float(acc);
      for (size_t i = offsets[t]; i < offsets[t] + sizes[t]; ++i) row.wrong += x[i] != want;
    }
  }
  scclEventStats_t stats{};
  stats.size = sizeof(stats);
  check(scclEventCommGetStats(ec, &stats), comm, "scclEventCommGetStats");
  check(scclEventCommDestroy(ec), comm, "scclEventCommDestroy");
  const double n = double(std::max<uint64_t>(1, stats.passes));
  row.pass_us = summarize(samples).median_us;
  row.put_us = stats.timePutUs / n;
  row.sync_us = stats.timeSyncUs / n;
  row.read_us = stats.timeReadUs / n;
  row.average_us = stats.timeAverageUs / n;
  row.bytes_per_pass = double(stats.bytesSent) / n;
  row.message_fraction = stats.messageFraction;
  // The dense baseline on the same buffer.
  std::vector<float> grad(count, 1.0f);
  Timing dense = timeIterations(o.common.warmup, o.common.iters, [&] {
    check(scclAllReduce(grad.data(), grad.data(), count, scclFloat32, scclAvg, comm, nullptr), comm,
          "scclAllReduce");
  });
  row.allreduce_us = dense.median_us;
  return row;
}

// Max over ranks of every timing; sums of the wrong counts.
RowResult combine(scclComm_t comm, int nranks, const RowResult& mine) {
  std::vector<double> values = {mine.pass_us,          mine.put_us,       mine.sync_us,
                                mine.read_us,          mine.average_us,   mine.bytes_per_pass,
                                mine.message_fraction, mine.allreduce_us, double(mine.wrong)};
  std::vector<double> all(values.size() * size_t(nranks));
  check(scclAllGather(values.data(), all.data(), values.size(), scclFloat64, comm, nullptr), comm,
        "scclAllGather");
  RowResult out;
  for (int r = 0; r < nranks; ++r) {
    const double* v = &all[size_t(r) * values.size()];
    out.pass_us = std::max(out.pass_us, v[0]);
    out.put_us = std::max(out.put_us, v[1]);
    out.sync_us = std::max(out.sync_us, v[2]);
    out.read_us = std::max(out.read_us, v[3]);
    out.average_us = std::max(out.average_us, v[4]);
    out.bytes_per_pass = std::max(out.bytes_per_pass, v[5]);
    out.message_fraction = std::max(out.message_fraction, v[6]);
    out.allreduce_us = std::max(out.allreduce_us, v[7]);
    out.wrong += uint64_t(v[8]);
  }
  return out;
}

int runRank(scclComm_t comm, const EventOptions& o) {
  int rank = 0, nranks = 1;
  scclCommUserRank(comm, &rank);
  scclCommCount(comm, &nranks);
  const char* transport = "";
  scclCommTransportName(comm, &transport);
  ResultTable table({{"elements", "elements", 11, -1},
                     {"bytes", "bytes", 11, -1},
                     {"tensors", "tensors", 8, -1},
                     {"q", "event_fraction", 6, 2},
                     {"msg frac", "message_fraction", 9, 3},
                     {"pass us", "pass_us", 10, 1},
                     {"put us", "put_us", 9, 1},
                     {"sync us", "sync_us", 9, 1},
                     {"read us", "read_us", 9, 1},
                     {"avg us", "average_us", 9, 1},
                     {"MB put", "mb_put_per_pass", 9, 3},
                     {"allred us", "allreduce_us", 10, 1},
                     {"x allred", "allreduce_over_pass", 9, 2},
                     {"check", "check", 6, -1}});
  if (rank == 0) {
    KeyValues header = machineDescription(o.common);
    header.push_back({"ranks", std::to_string(nranks) + " (transport " + transport + ")"});
    header.push_back({"mode", o.synchronous ? "synchronous" : "asynchronous"});
    printKeyValues(stdout, header);
    table.printHeader(stdout);
  }
  int code = 0;
  for (size_t count : elementCounts(o.common)) {
    for (double q : o.fractions) {
      watchdogKick("event exchange, " + std::to_string(count) + " elements, q " +
                   std::to_string(q));
      RowResult row = combine(comm, nranks, runRow(comm, rank, nranks, o, count, q));
      bool checked = o.common.check != 0 && o.synchronous == 1;
      if (row.wrong != 0) code = 1;
      if (rank == 0) {
        table.addRow(
            {double(count), double(count * 4), double(std::min<size_t>(size_t(o.tensors), count)),
             q, row.message_fraction, row.pass_us, row.put_us, row.sync_us, row.read_us,
             row.average_us, row.bytes_per_pass / 1e6, row.allreduce_us,
             row.pass_us > 0 ? row.allreduce_us / row.pass_us : 0.0,
             !checked         ? "n/a"
             : row.wrong == 0 ? "PASS"
                              : "FAIL"},
            stdout);
      }
    }
  }
  if (rank == 0 && !o.common.json_path.empty()) {
    table.writeJson(o.common.json_path, "event_exchange_perf", machineDescription(o.common),
                    {{"ranks", std::to_string(nranks)}, {"transport", transport}});
  }
  return code;
}

// -T becomes the deadline of every wait of the communicator.
scclConfig_t commConfig(const EventOptions& o) {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  if (o.common.timeout_s > 0) config.timeoutMs = o.common.timeout_s * 1000;
  config.commName = "event_exchange_perf";
  return config;
}

int runGuarded(scclComm_t comm, const EventOptions& o) {
  try {
    return runRank(comm, o);
  } catch (const RankFailure& failure) {
    std::fprintf(stderr, "%s\n", failure.what());
    return 1;
  }
}

bool parseFractions(const char* text, std::vector<double>* out) {
  out->clear();
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    double q = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(q >= 0 && q <= 1)) return false;
    out->push_back(q);
  }
  return !out->empty();
}

bool parsePositive(const char* text, int* value) {
  char* end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < 1 || parsed > 1000000) return false;
  *value = int(parsed);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  EventOptions o;
  o.common.min_size = o.common.max_size = 4u << 20;  // 4 MiB of float32 (1M parameters)
  o.common.iters = 20;
  o.common.warmup = 3;
  std::vector<ExtraFlag> extra = {
      {'k', "N      tensors the buffer is split into [8]",
       [&](const char* t) { return parsePositive(t, &o.tensors); }},
      {'q', "LIST   event fractions in [0, 1], comma separated [0,0.25,0.5,1]",
       [&](const char* t) { return parseFractions(t, &o.fractions); }},
      {'r', "N      in-process ranks (threads, transport local) when not under mpirun [4]",
       [&](const char* t) { return parsePositive(t, &o.local_ranks); }},
      {'S', "0|1    synchronous mode (a barrier per pass; verifiable) [1]",
       [&](const char* t) {
         o.synchronous = std::strcmp(t, "0") == 0 ? 0 : 1;
         return std::strcmp(t, "0") == 0 || std::strcmp(t, "1") == 0;
       }},
      {'M', "0|1    1: use MPI even where no mpirun is detected [0]",
       [&](const char* t) {
         o.force_mpi = std::strcmp(t, "1") == 0;
         return o.force_mpi || std::strcmp(t, "0") == 0;
       }},
  };
  int exit_code = 0;
  if (!parseOptions(argc, argv,
                    "one EventGraD pass (event-triggered neighbour averaging over one-sided puts) "
                    "against the dense all-reduce; ranks: -r N threads, or one per process under "
                    "mpirun",
                    extra, &o.common, &exit_code)) {
    return exit_code;
  }
  bool mpi = o.force_mpi || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
             std::getenv("PMIX_RANK") != nullptr || std::getenv("PMI_RANK") != nullptr;
  if (mpi) {
#ifdef SCCL_PERF_WITH_MPI
    MPI_Init(&argc, &argv);
    scclComm_t comm = nullptr;
    const scclConfig_t config = commConfig(o);
    scclResult_t result = scclCommInitMpi(&comm, nullptr, &config);
    if (result != scclSuccess) {
      std::fprintf(stderr, "scclCommInitMpi: %s\n", scclGetLastError(nullptr));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int code = runGuarded(comm, o);
    if (code != 0) MPI_Abort(MPI_COMM_WORLD, code);  // a failed rank ends the whole job
    scclCommDestroy(comm);
    MPI_Finalize();
    return code;
#else
    std::fprintf(stderr, "started under mpirun, but this build has no MPI; use -r N\n");
    return 2;
#endif
  }
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) return 1;
  std::vector<int> codes(size_t(o.local_ranks), 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < o.local_ranks; ++r) {
    threads.emplace_back([&, r] {
      scclComm_t comm = nullptr;
      scclConfig_t config = commConfig(o);
      if (scclCommInitRankConfig(&comm, o.local_ranks, id, r, &config) != scclSuccess) {
        std::fprintf(stderr, "rank %d: %s\n", r, scclGetLastError(nullptr));
        return;
      }
      codes[size_t(r)] = runGuarded(comm, o);
      // A failed rank aborts so that its peers are released instead of waiting for the deadline.
      if (codes[size_t(r)] != 0) {
        scclCommAbort(comm);
      } else {
        scclCommDestroy(comm);
      }
    });
  }
  int code = 0;
  for (int r = 0; r < o.local_ranks; ++r) {
    threads[size_t(r)].join();
    code = std::max(code, codes[size_t(r)]);
  }
  return code;
}
