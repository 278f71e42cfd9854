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

// Under mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK set, or -M 1): MPI_Init,
// scclCommInitMpi, one rank per process. Otherwise options.local_ranks threads of this process on
// the local transport. Returns the highest exit code of this process's ranks.
int launchRanks(const SparseOptions& options, const RankBody& body);

}  // namespace sccl_perf
