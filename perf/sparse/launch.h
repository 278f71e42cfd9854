// Command line and rank start-up of sparse_allreduce_perf.
#pragma once

#include <functional>

#include "sparse/bench.h"

namespace sccl_perf {

// Parses argv (the shared perf flags plus -o -a -W -L -r -M -C -I -R -S). On -h or an error prints
// the usage and returns false with the exit code in *exit_code.
bool parseSparseOptions(int argc, char** argv, SparseOptions* options, int* exit_code);

// What one rank runs; returns the rank's exit code.
using RankBody = std::function<int(const Rank&)>;

// -g 1: every rank on a GPU, over the NCCL transport. select_device(rank) runs in the rank's
// thread (or process) before its communicator is created, since NCCL binds the current device
// then; false ends the rank with exit code 1 (it has said why).
struct DeviceLaunch {
  std::function<bool(int rank)> select_device;
};

// True when the ranks are MPI processes: under mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
// PMI_RANK set) or with -M 1.
bool launchedByMpi(const SparseOptions& options);

// -g 1, once a device count is known: the algorithms to run (by default dense, micro_sync_free,
// exdyna_sync_free and their graph replay rows; requested rows without a device path go to
// options->skipped_on_device) and, for in-process ranks, one rank per GPU (-r may ask for fewer,
// not more: NCCL takes one GPU per rank). False, with the reason on stderr, when nothing can run.
bool planDeviceRun(int devices, SparseOptions* options);

// Without -g 1: the requested graph replay rows (isGraphReplayRow) go to
// options->skipped_on_host, since host buffers have no graph to replay. False, with the reason on
// stderr, when nothing is left to run.
bool planHostRun(SparseOptions* options);

// Under mpirun (launchedByMpi): MPI_Init, scclCommInitMpi, one rank per process. Otherwise
// options.local_ranks threads of this process on the local transport. With `device`, the
// transport is "nccl" in both cases. Returns the highest exit code of this process's ranks.
int launchRanks(const SparseOptions& options, const RankBody& body,
                const DeviceLaunch* device = nullptr);

}  // namespace sccl_perf
