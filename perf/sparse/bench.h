// Shared pieces of sparse_allreduce_perf: its options, one rank's view of the job (in-process
// thread or MPI process alike), and the few collective helpers the driver and the check pass
// need to agree on results across ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/options.h"
#include "sparse/trace_inputs.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_perf {

// The presets of the library's registry, in the order the table prints them.
inline const std::vector<std::string>& allAlgorithms() {
  static const std::vector<std::string> names = {"dense", "topk",   "cltk",  "hard_threshold",
                                                 "micro", "exdyna", "sidco", "s2"};
  return names;
}

// The default presets whose scclSparseAllreduce also runs on device buffers (the gather and
// sketch reductions, docs/gpu.md): all but dense, which -g 1 runs as scclAllReduce.
inline const std::vector<std::string>& presetsOnDevice() {
  static const std::vector<std::string> names = {
      "topk", "cltk", "hard_threshold", "micro", "exdyna", "sidco", "s2"};
  return names;
}

// The sync-free presets, which run on device buffers too (docs/gpu.md). -a accepts them on the
// host path too; -g 1 runs these, presetsOnDevice() and the dense all-reduce
// (scclAllReduce); the library answers scclInvalidUsage to everything else.
inline const std::vector<std::string>& syncFreeAlgorithms() {
  static const std::vector<std::string> names = {"micro_sync_free", "exdyna_sync_free"};
  return names;
}

// -g 1 only: "<preset>:graph" for each sync-free preset, the preset with streamOrdered = 1 and
// every call a replay of a CUDA graph of one captured call (DeviceCalls::replay), to set against
// the preset's own row (the eager call, buffers swapped). Host buffers have no graph to replay.
inline const std::vector<std::string>& graphReplayRows() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> rows;
    for (const std::string& preset : syncFreeAlgorithms()) rows.push_back(preset + ":graph");
    return rows;
  }();
  return names;
}

struct SparseOptions {
  PerfOptions common;
  scclRedOp_t op = scclSum;                               // -o
  std::vector<std::string> algorithms = allAlgorithms();  // -a
  bool algorithms_given = false;                          // -a was on the command line
  int local_ranks = 4;                                    // -r
  bool ranks_given = false;                               // -r was on the command line
  bool force_mpi = false;                                 // -M 1
  std::string config_path;                                // -C
  // The sparse config every sparsifier starts from: the initializer, then the -C file. The
  // algorithm and the density of each row are set on top of it.
  scclSparseConfig_t base_config = SCCL_SPARSE_CONFIG_INITIALIZER;
  int sparse_warmup = 30;   // -W: warm-up calls of every sparse algorithm (at least)
  int warmup_limit = 1000;  // -L: more warm-up calls, up to this many, until k' has settled
  // -P 1: each sparse row's sparsifier creation and first call, slowest rank, printed after the
  // block. Only a process's first row meets the transport's connections unused.
  bool print_setup = false;
  bool embedding = false;   // -I embedding: Zipf-touched embedding rows (sparse/inputs.h)
  size_t row_width = 64;    // -R: embedding row width (elements)
  // -I trace:DIR: real gradients, loaded once per process (sizes = their count).
  std::shared_ptr<const TraceSet> traces;
  // -S: one extra s2 row per lambda, named "s2:<lambda>" (the sketch width sweep).
  std::vector<double> sketch_lambdas;
  // -g 1: the requested rows without a device path, left out of the run (planDeviceRun).
  std::vector<std::string> skipped_on_device;
  // Host path: the requested graph replay rows, left out of the run (planHostRun).
  std::vector<std::string> skipped_on_host;
};

// "s2:0.25" -> 0.25; false for any other name.
bool sketchSweepLambda(const std::string& name, double* lambda);

// True for rows that run the sketch reduction (s2 and the -S sweep rows).
bool isSketchRow(const std::string& name);

// True for the graph replay rows (graphReplayRows).
bool isGraphReplayRow(const std::string& name);

// A failed sparsecoll call inside a rank; the launcher reports it and aborts the communicator
// so that peers waiting in a collective are released instead of timing out.
struct RankError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws RankError with `what`, the result and the library's message when result != success.
void check(scclResult_t result, scclComm_t comm, const char* what);

struct Rank {
  scclComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  bool in_process = true;  // the ranks are threads of this process (else one per MPI process)

  // Every rank's `mine` (same length everywhere), rank after rank.
  std::vector<double> allGather(const std::vector<double>& mine) const;
  void barrier() const;
};

// A sparsifier that is destroyed however the rank leaves its scope.
using Sparsifier = std::unique_ptr<scclSparsifier, decltype(&scclSparsifierDestroy)>;

inline Sparsifier createSparsifier(const Rank& rank, size_t count, scclDataType_t dtype,
                                   const scclSparseConfig_t& config) {
  scclSparsifier_t created = nullptr;
  check(scclSparsifierCreate(&created, rank.comm, count, dtype, &config), rank.comm,
        "scclSparsifierCreate");
  return Sparsifier(created, &scclSparsifierDestroy);
}

// The config of one row: the base config with `algorithm` and `density` set (a graph replay row:
// its preset's, with streamOrdered = 1).
// The row "auto": algorithm "auto", the preset the library's cost model picks at creation
// (printed as auto:<preset>; its first call is checked as that preset's).
inline constexpr const char* kAutoRow = "auto";

scclSparseConfig_t rowConfig(const SparseOptions& options, const std::string& algorithm,
                             double density);

// The estimator a row runs ("scaling", "fixed", "topk"): the config's, else the preset's;
// "none" when the reduction is dense (nothing is selected).
std::string estimatorOf(const scclSparseConfig_t& config);

// True when the config runs the preset as the registry defines it (no axis override, no
// per-rank cap), so the check pass may model its first call exactly.
bool isPlainPreset(const scclSparseConfig_t& config);

}  // namespace sccl_perf
