// Command line and rank start-up of sparse_allreduce_perf. One body runs per rank, whether the
// ranks are threads of this process (-r N, transport "local") or processes started by mpirun
// (scclCommInitMpi over MPI_COMM_WORLD), so both figures come from the same code path.
#include "sparse/launch.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#ifdef SCCL_PERF_WITH_MPI
#include <mpi.h>
#endif

#include "sparse/peers.h"

namespace sccl_perf {
namespace {

bool parseAlgorithms(const char* text, std::vector<std::string>* out) {
  out->clear();
  std::stringstream list(text);
  std::string name;
  while (std::getline(list, name, ',')) {
    bool known = isPeer(name);
    for (const std::string& preset : allAlgorithms()) known = known || preset == name;
    for (const std::string& preset : syncFreeAlgorithms()) known = known || preset == name;
    known = known || isGraphReplayRow(name);  // -g 1 runs them; the host path lists them as not run
    known = known || name == kAutoRow;
    if (!known) {
      std::fprintf(stderr, "unknown algorithm '%s'\n", name.c_str());
      return false;
    }
    out->push_back(name);
  }
  return !out->empty();
}

bool parseLambdas(const char* text, std::vector<double>* out) {
  if (parseNumberList(text, 0, 64, out)) return true;
  std::fprintf(stderr, "bad sketch lambdas '%s' (each in (0, 64])\n", text);
  return false;
}

// -I: the trace directory is loaded here, once per process, so that a bad file stops the run
// before any rank starts.
bool parseInput(const char* text, SparseOptions* o) {
  o->embedding = std::strcmp(text, "embedding") == 0;
  o->traces.reset();
  if (std::strncmp(text, "trace:", 6) == 0) {
    auto traces = std::make_shared<TraceSet>();
    std::string error;
    if (!loadTraceSet(text + 6, traces.get(), &error)) {
      std::fprintf(stderr, "-I %s: %s\n", text, error.c_str());
      return false;
    }
    o->traces = std::move(traces);
    return true;
  }
  return o->embedding || std::strcmp(text, "laplace") == 0;
}

bool parseCount(const char* text, int min_value, int* value) {
  char* end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < min_value || parsed > (1 << 30)) return false;
  *value = static_cast<int>(parsed);
  return true;
}

// Applies a JSON sparse config file to options->base_config; the library names a bad key.
bool loadConfig(const char* path, SparseOptions* options) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  if (!file) {
    std::fprintf(stderr, "cannot read %s\n", path);
    return false;
  }
  scclResult_t result = scclSparseConfigFromJson(text.str().c_str(), &options->base_config);
  if (result != scclSuccess) {
    std::fprintf(stderr, "%s: %s\n", path, scclGetLastError(nullptr));
    return false;
  }
  options->config_path = path;
  return true;
}

std::vector<ExtraFlag> extraFlags(SparseOptions* o) {
  return {
      {'o', "OP     reduction: sum or avg [sum]",
       [o](const char* t) {
         o->op = std::strcmp(t, "avg") == 0 ? scclAvg : scclSum;
         return std::strcmp(t, "avg") == 0 || std::strcmp(t, "sum") == 0;
       }},
      {'a',
       "LIST   algorithms: dense,topk,cltk,hard_threshold,micro,exdyna,sidco,s2 [all but the\n"
       "            sync-free presets micro_sync_free,exdyna_sync_free, which may be added; -g 1:\n"
       "            dense,topk,cltk,hard_threshold,micro,exdyna,sidco,s2,micro_sync_free,\n"
       "            exdyna_sync_free,micro_sync_free:graph,\n"
       "            exdyna_sync_free:graph (-g 1 only: the preset stream-ordered, each call\n"
       "            a CUDA graph replay)]; the peer mpi_allreduce (MPI_Allreduce of the dense\n"
       "            buffer, under mpirun) may be added, and auto (the library's cost model\n"
       "            picks a preset at creation, on -g 1 one with a device path at the first\n"
       "            call; printed auto:<preset>)",
       [o](const char* t) {
         o->algorithms_given = true;
         return parseAlgorithms(t, &o->algorithms);
       }},
      {'W', "N      warm-up calls of each sparse algorithm, at least [30]",
       [o](const char* t) { return parseCount(t, 0, &o->sparse_warmup); }},
      {'L', "N      ... and up to N while k' still moves (see the header) [1000]",
       [o](const char* t) { return parseCount(t, 0, &o->warmup_limit); }},
      {'r',
       "N      in-process ranks (threads, transport local) when not under mpirun [4; -g 1: one\n"
       "            per GPU, transport nccl]",
       [o](const char* t) {
         o->ranks_given = true;
         return parseCount(t, 1, &o->local_ranks);
       }},
      {'M', "0|1    1: use MPI (scclCommInitMpi) even where no mpirun is detected [0]",
       [o](const char* t) {
         o->force_mpi = std::strcmp(t, "1") == 0;
         return o->force_mpi || std::strcmp(t, "0") == 0;
       }},
      {'C', "FILE   sparse config (JSON, scclSparseConfigFromJson) applied before -a and -D",
       [o](const char* t) { return loadConfig(t, o); }},
      {'I',
       "KIND   input: laplace, embedding (Zipf rows of -R elements, -D of the rows "
       "drawn per rank; s2 then marks non-zero rows, hard_threshold sends every "
       "non-zero), or trace:DIR (gradient trace files; the size is theirs) [laplace]",
       [o](const char* t) { return parseInput(t, o); }},
      {'R', "N      embedding row width in elements (-I embedding) [64]",
       [o](const char* t) {
         int width = 0;
         if (!parseCount(t, 1, &width)) return false;
         o->row_width = size_t(width);
         return true;
       }},
      {'P',
       "0|1    1: after each block, every sparse row's creation and first call (ms, slowest\n"
       "            rank); \"auto\" creates by probing and calibrating. Only the first row of a\n"
       "            process meets the transport unused: one -a per run to compare them [0]",
       [o](const char* t) {
         o->print_setup = std::strcmp(t, "1") == 0;
         return o->print_setup || std::strcmp(t, "0") == 0;
       }},
      {'S', "LIST   sketch lambdas: one more s2 row per value, e.g. 0.05,0.1,0.25,0.5,1 [none]",
       [o](const char* t) { return parseLambdas(t, &o->sketch_lambdas); }},
  };
}

scclConfig_t commConfig(const SparseOptions& options, const char* transport) {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.transport = transport;
  if (options.common.timeout_s > 0) config.timeoutMs = options.common.timeout_s * 1000;
  config.commName = "sparse_allreduce_perf";
  return config;
}

// Runs the body; on a failed call prints it and aborts the communicator (rank.comm becomes
// null) so that the other ranks fail fast instead of waiting for the deadline.
int runGuarded(Rank& rank, const RankBody& body) {
  try {
    return body(rank);
  } catch (const RankError& error) {
    std::fprintf(stderr, "rank %d: %s\n", rank.rank, error.what());
    scclCommAbort(rank.comm);
    rank.comm = nullptr;
    return 1;
  }
}

int runMpiRanks(const SparseOptions& options, const RankBody& body, const DeviceLaunch* device) {
#ifdef SCCL_PERF_WITH_MPI
  MPI_Init(nullptr, nullptr);
  // No transport named: SCCL_TRANSPORT picks it (ucx, say), else scclCommInitMpi's "mpi".
  scclConfig_t config = commConfig(options, device != nullptr ? "nccl" : nullptr);
  Rank rank;
  rank.in_process = false;
  if (device != nullptr) {
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (!device->select_device(world_rank)) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  scclResult_t result = scclCommInitMpi(&rank.comm, nullptr, &config);
  if (result != scclSuccess) {
    std::fprintf(stderr, "scclCommInitMpi: %s (%s)\n", scclGetErrorString(result),
                 scclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  scclCommUserRank(rank.comm, &rank.rank);
  scclCommCount(rank.comm, &rank.nranks);
  int code = runGuarded(rank, body);
  // A rank that failed cannot rely on its peers noticing: end the whole job.
  if (rank.comm == nullptr) MPI_Abort(MPI_COMM_WORLD, code);
  scclCommDestroy(rank.comm);
  MPI_Finalize();
  return code;
#else
  (void)options;
  (void)body;
  (void)device;
  std::fprintf(stderr,
               "started under mpirun, but this build has no MPI (SCCL_ENABLE_MPI=OFF); run "
               "without mpirun and use -r N in-process ranks\n");
  return 2;
#endif
}

int runLocalRanks(const SparseOptions& options, const RankBody& body, const DeviceLaunch* device) {
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) {
    std::fprintf(stderr, "scclGetUniqueId: %s\n", scclGetLastError(nullptr));
    return 1;
  }
  const int n = options.local_ranks;
  const scclConfig_t config = commConfig(options, device != nullptr ? "nccl" : "local");
  std::vector<int> codes(static_cast<size_t>(n), 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Rank rank;
      rank.rank = r;
      rank.nranks = n;
      if (device != nullptr && !device->select_device(r)) return;
      scclResult_t result = scclCommInitRankConfig(&rank.comm, n, id, r, &config);
      if (result != scclSuccess) {
        std::fprintf(stderr, "rank %d: scclCommInitRankConfig: %s\n", r, scclGetLastError(nullptr));
        return;
      }
      codes[static_cast<size_t>(r)] = runGuarded(rank, body);
      if (rank.comm != nullptr) scclCommDestroy(rank.comm);
    });
  }
  int code = 0;
  for (int r = 0; r < n; ++r) {
    threads[static_cast<size_t>(r)].join();
    code = std::max(code, codes[static_cast<size_t>(r)]);
  }
  return code;
}

bool runsOnDevice(const std::string& name) {
  if (name == "dense") return true;  // as scclAllReduce of the device buffers
  if (name == kAutoRow) return true;  // its first device call picks a preset with a device path
  const std::vector<std::string>& sync_free = syncFreeAlgorithms();
  const std::vector<std::string>& presets = presetsOnDevice();
  double lambda = 0;  // the -S sweep rows s2:<lambda> are S2 too
  return std::find(sync_free.begin(), sync_free.end(), name) != sync_free.end() ||
         std::find(presets.begin(), presets.end(), name) != presets.end() ||
         sketchSweepLambda(name, &lambda) || isGraphReplayRow(name);
}

}  // namespace

bool launchedByMpi(const SparseOptions& options) {
  return options.force_mpi || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr || std::getenv("PMI_RANK") != nullptr;
}

bool planDeviceRun(int devices, SparseOptions* options) {
  std::vector<std::string> requested = options->algorithms;
  if (!options->algorithms_given) {
    // The host default (every preset) and the sync-free presets with their graph replay rows.
    requested = {"dense"};
    requested.insert(requested.end(), presetsOnDevice().begin(), presetsOnDevice().end());
    requested.insert(requested.end(), syncFreeAlgorithms().begin(), syncFreeAlgorithms().end());
    requested.insert(requested.end(), graphReplayRows().begin(), graphReplayRows().end());
    double lambda = 0;
    for (const std::string& name : options->algorithms) {
      if (sketchSweepLambda(name, &lambda)) requested.push_back(name);  // -S asked for them
    }
  }
  options->algorithms.clear();
  options->skipped_on_device.clear();
  for (const std::string& name : requested)
    (runsOnDevice(name) ? options->algorithms : options->skipped_on_device).push_back(name);
  if (options->algorithms.empty()) {
    std::fprintf(stderr,
                 "-g 1: none of the requested algorithms runs on device buffers (those that do: "
                 "dense, topk, cltk, hard_threshold, micro, exdyna, sidco, s2, micro_sync_free, "
                 "exdyna_sync_free, micro_sync_free:graph, exdyna_sync_free:graph)\n");
    return false;
  }
  if (launchedByMpi(*options)) return true;  // one process per rank, rank r on GPU r % devices
  if (!options->ranks_given) {
    options->local_ranks = devices;
  } else if (options->local_ranks > devices) {
    std::fprintf(stderr,
                 "-g 1: -r %d in-process ranks, but %d GPU%s: the NCCL transport needs one GPU "
                 "per rank\n",
                 options->local_ranks, devices, devices == 1 ? "" : "s");
    return false;
  }
  return true;
}

bool planHostRun(SparseOptions* options) {
  std::vector<std::string> requested;
  requested.swap(options->algorithms);
  options->skipped_on_host.clear();
  for (const std::string& name : requested)
    (isGraphReplayRow(name) ? options->skipped_on_host : options->algorithms).push_back(name);
  if (!options->algorithms.empty()) return true;
  std::fprintf(stderr,
               "none of the requested algorithms runs on host buffers: the :graph rows replay a "
               "CUDA graph of device buffers (-g 1)\n");
  return false;
}

void check(scclResult_t result, scclComm_t comm, const char* what) {
  if (result == scclSuccess) return;
  throw RankError(std::string(what) + ": " + scclGetErrorString(result) + " (" +
                  scclGetLastError(comm) + ")");
}

std::vector<double> Rank::allGather(const std::vector<double>& mine) const {
  std::vector<double> all(mine.size() * static_cast<size_t>(nranks));
  check(scclAllGather(mine.data(), all.data(), mine.size(), scclFloat64, comm, nullptr), comm,
        "scclAllGather");
  return all;
}

void Rank::barrier() const {
  check(scclBarrier(comm), comm, "scclBarrier");
}

bool sketchSweepLambda(const std::string& name, double* lambda) {
  if (name.rfind("s2:", 0) != 0) return false;
  *lambda = std::strtod(name.c_str() + 3, nullptr);
  return true;
}

bool isGraphReplayRow(const std::string& name) {
  const std::vector<std::string>& rows = graphReplayRows();
  return std::find(rows.begin(), rows.end(), name) != rows.end();
}

bool isSketchRow(const std::string& name) {
  double lambda = 0;
  return name == "s2" || sketchSweepLambda(name, &lambda);
}

scclSparseConfig_t rowConfig(const SparseOptions& options, const std::string& algorithm,
                             double density) {
  scclSparseConfig_t config = options.base_config;
  // The preset lists hold static strings, so the pointer outlives the config.
  for (const std::string& name : allAlgorithms()) {
    if (name == algorithm) config.algorithm = name.c_str();
  }
  for (const std::string& name : syncFreeAlgorithms()) {
    if (name == algorithm) config.algorithm = name.c_str();
    if (name + ":graph" == algorithm) {  // graphReplayRows: a captured call must only enqueue
      config.algorithm = name.c_str();
      config.streamOrdered = 1;
    }
  }
  if (algorithm == kAutoRow) config.algorithm = kAutoRow;  // the library chooses at creation
  double lambda = 0;
  if (sketchSweepLambda(algorithm, &lambda)) {
    config.algorithm = "s2";
    config.sketchLambda = lambda;
  }
  config.density = density;
  if (options.embedding) {
    // The paper's setting: a block is an embedding row, every non-zero row is sent. The
    // (index, value) all-gather of the non-zeros is hard_threshold at the smallest threshold.
    if (isSketchRow(algorithm)) {
      config.sketchBlockSize = int(options.row_width);
      config.sketchBlockSelection = "nonzero";
    }
    if (algorithm == "hard_threshold") config.threshold = 1e-300;
  }
  return config;
}

std::string estimatorOf(const scclSparseConfig_t& config) {
  const std::string preset = config.algorithm;
  const std::string reduction = config.reduction != nullptr ? config.reduction
                                : preset == "dense"         ? "dense"
                                : preset == "s2"            ? "sketch"
                                                            : "gather";
  if (reduction == "dense") return "none";     // the whole gradient is reduced, nothing selected
  if (reduction == "sketch") return "sketch";  // blocks chosen by norm or non-zero, no threshold
  if (config.estimator != nullptr) return config.estimator;
  if (preset == "topk" || preset == "cltk") return "topk";
  if (preset == "hard_threshold" || preset == "dense") return "fixed";
  if (preset == "sidco") return "sidco_exp";
  return "scaling";
}

bool isPlainPreset(const scclSparseConfig_t& config) {
  return config.estimator == nullptr && config.searchSpace == nullptr &&
         config.reduction == nullptr && config.maxDensitySlack < 0;
}

bool parseSparseOptions(int argc, char** argv, SparseOptions* options, int* exit_code) {
  options->common.min_size = options->common.max_size = 104000000;  // 26,000,000 float32
  std::vector<ExtraFlag> extra = extraFlags(options);
  if (!parseOptions(argc, argv,
                    "sparse all-reduce (every preset) against the dense all-reduce, nccl-tests "
                    "style; ranks: -r N threads, or one per process under mpirun",
                    extra, &options->common, exit_code)) {
    return false;
  }
  if (options->traces) {
    // One size: the traces' own.
    const size_t unit = options->common.sizes_are_elements ? 1 : dtypeSize(options->common.dtype);
    options->common.min_size = options->common.max_size = options->traces->count * unit;
  }
  return true;
}

int launchRanks(const SparseOptions& options, const RankBody& body, const DeviceLaunch* device) {
  if (!launchedByMpi(options)) {
    for (const std::string& name : options.algorithms) {
      if (isPeer(name)) {
        std::fprintf(stderr, "%s runs only under mpirun (one MPI process per rank)\n",
                     name.c_str());
        return 2;
      }
    }
  }
  return launchedByMpi(options) ? runMpiRanks(options, body, device)
                                : runLocalRanks(options, body, device);
}

}  // namespace sccl_perf
