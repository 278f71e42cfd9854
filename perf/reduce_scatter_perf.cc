// reduce_scatter_perf: scclReduceScatter against MPI_Reduce_scatter_block (Open MPI) and against
// the library's own scclAllReduce of the same vector, in one run.
//
// Per size (-b/-e: elements of each rank's sendbuf, nranks blocks of recvcount), rounds
// interleaved (scclReduceScatter, scclAllReduce, and under mpirun MPI_Reduce_scatter_block),
// a barrier before each operation; each rank's median, the slowest rank's reported.
// Wire bytes per rank: reduce-scatter (n-1)/n of the sendbuf out and in, all-reduce twice that.
// Check (-c 1): every rank's block is bitwise the same block of scclAllReduce's result (the
// documented contract), counted in #wrong over all ranks. MPI's reduce-scatter is not held to
// it (its reduction order is its own).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#ifdef SCCL_PERF_WITH_MPI
#include <mpi.h>
#endif

#include "common/data.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/timing.h"
#include "common/watchdog.h"
#include "sparse/bench.h"
#include "sparse/launch.h"

namespace {

using namespace sccl_perf;

double slowest(const Rank& rank, double mine) {
  const std::vector<double> all = rank.allGather({mine});
  return *std::max_element(all.begin(), all.end());
}

#ifdef SCCL_PERF_WITH_MPI
MPI_Datatype mpiType(scclDataType_t dtype) {
  return dtype == scclFloat64 ? MPI_DOUBLE : MPI_FLOAT;
}
#endif

// Rank `rank`'s sendbuf: varied magnitudes, so a different summation order shows in the bits.
void fillSend(std::vector<unsigned char>* send, const Rank& rank, size_t count,
              scclDataType_t dtype) {
  for (size_t i = 0; i < count; ++i) {
    const double magnitude = double(1u << ((i * 7 + size_t(rank.rank) * 3) % 20));
    storeValue(send->data(), dtype, i,
               (double((i * 2654435761u + rank.rank) % 1000) - 500.0) / magnitude);
  }
}

int runRank(const Rank& rank, const SparseOptions& o, bool mpi) {
  const PerfOptions& common = o.common;
  ResultTable table({{"count", "count", 11, -1},
                     {"recvcount", "recvcount", 10, -1},
                     {"type", "type", 6, 0},
                     {"rs(us)", "reduce_scatter_us", 10, 1},
                     {"allreduce(us)", "allreduce_us", 13, 1},
                     {"mpi rs(us)", "mpi_reduce_scatter_block_us", 10, 1},
                     {"rs/mpi", "reduce_scatter_over_mpi", 7, 3},
                     {"rs/allred", "reduce_scatter_over_allreduce", 9, 3},
                     {"rs GB/s", "reduce_scatter_bus_gbytes_per_s", 8, 2},
                     {"#wrong", "wrong", 6, -1}});
  const KeyValues machine = machineDescription(common);
  const char* transport = nullptr;
  scclCommTransportName(rank.comm, &transport);
  if (rank.rank == 0) {
    KeyValues header = machine;
    header.push_back({"ranks", std::to_string(rank.nranks) + (mpi ? " (mpi)" : " (local)")});
    header.push_back({"transport", transport != nullptr ? transport : "?"});
    printKeyValues(stdout, header);
    table.printHeader(stdout);
  }
  const scclDataType_t dtype = common.dtype;
  const size_t width = dtypeSize(dtype), n = size_t(rank.nranks);
  size_t total_wrong = 0;
  for (size_t count : elementCounts(common)) {
    const size_t recvcount = count / n, used = recvcount * n;
    watchdogKick("reduce-scatter of " + std::to_string(used) + " elements");
    std::vector<unsigned char> send(used * width), recv(recvcount * width), reduced(used * width),
        mpi_recv(recvcount * width);
    fillSend(&send, rank, used, dtype);
    auto reduce_scatter = [&] {
      rank.barrier();
      check(scclReduceScatter(send.data(), recv.data(), recvcount, dtype, scclSum, rank.comm,
                              nullptr),
            rank.comm, "scclReduceScatter");
    };
    auto all_reduce = [&] {
      rank.barrier();
      check(scclAllReduce(send.data(), reduced.data(), used, dtype, scclSum, rank.comm, nullptr),
            rank.comm, "scclAllReduce");
    };
    double mpi_us = -1, rs_us = 0, ar_us = 0;
#ifdef SCCL_PERF_WITH_MPI
    if (mpi && (dtype == scclFloat32 || dtype == scclFloat64)) {
      auto mpi_reduce_scatter = [&] {
        rank.barrier();
        MPI_Reduce_scatter_block(send.data(), mpi_recv.data(), int(recvcount), mpiType(dtype),
                                 MPI_SUM, MPI_COMM_WORLD);
      };
      const std::vector<Timing> t = timeInterleaved(common.warmup, common.iters, reduce_scatter,
                                                    all_reduce, mpi_reduce_scatter);
      rs_us = slowest(rank, t[0].median_us);
      ar_us = slowest(rank, t[1].median_us);
      mpi_us = slowest(rank, t[2].median_us);
    }
#endif
    if (mpi_us < 0) {
      const std::vector<Timing> t =
          timeInterleaved(common.warmup, common.iters, reduce_scatter, all_reduce);
      rs_us = slowest(rank, t[0].median_us);
      ar_us = slowest(rank, t[1].median_us);
    }
    size_t wrong = 0;
    if (common.check) {
      reduce_scatter();
      all_reduce();
      const unsigned char* mine = reduced.data() + size_t(rank.rank) * recvcount * width;
      double bad = 0;
      for (size_t i = 0; i < recvcount; ++i)
        bad += std::memcmp(recv.data() + i * width, mine + i * width, width) != 0;
      double sum = 0;
      for (double w : rank.allGather({bad})) sum += w;
      wrong = size_t(sum);
    }
    total_wrong += wrong;
    if (rank.rank == 0) {
      // nccl-tests' bus bandwidth of a reduce-scatter: (n-1)/n of the sendbuf per rank.
      const double bus =
          rs_us > 0 ? double(used * width) * double(n - 1) / double(n) / rs_us / 1e3 : 0.0;
      table.addRow({double(used), double(recvcount), dtypeName(dtype), rs_us, ar_us,
                    mpi_us >= 0 ? Cell(mpi_us) : Cell("N/A"),
                    mpi_us > 0 ? Cell(rs_us / mpi_us) : Cell("N/A"),
                    ar_us > 0 ? Cell(rs_us / ar_us) : Cell("N/A"), bus,
                    common.check ? Cell(double(wrong)) : Cell("N/A")},
                   stdout);
    }
  }
  if (rank.rank == 0) {
    std::printf(
        "# rs/mpi: scclReduceScatter over MPI_Reduce_scatter_block (same run) | wrong "
        "elements against scclAllReduce's slice: %zu %s\n",
        total_wrong, total_wrong ? "FAILED" : "OK");
    if (!common.json_path.empty() &&
        !table.writeJson(common.json_path, "reduce_scatter_perf", machine,
                         {{"ranks", std::to_string(rank.nranks)},
                          {"transport", transport != nullptr ? transport : "?"}})) {
      std::fprintf(stderr, "cannot write %s\n", common.json_path.c_str());
      return 1;
    }
  }
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  SparseOptions o;
  o.algorithms.clear();
  o.common.min_size = o.common.max_size = 25000000;
  o.common.sizes_are_elements = true;
  o.common.iters = 10;
  std::vector<ExtraFlag> extra = {
      {'r', "N      in-process ranks (threads, transport local) when not under mpirun [4]",
       [&](const char* text) { return (o.local_ranks = std::atoi(text)) >= 1; }},
      {'M', "0|1    1: use MPI (scclCommInitMpi) even where no mpirun is detected [0]",
       [&](const char* text) {
         o.force_mpi = std::strcmp(text, "1") == 0;
         return o.force_mpi || std::strcmp(text, "0") == 0;
       }}};
  int exit_code = 0;
  if (!parseOptions(argc, argv,
                    "scclReduceScatter against MPI_Reduce_scatter_block and scclAllReduce; sizes "
                    "are elements of each rank's sendbuf (-u)",
                    extra, &o.common, &exit_code)) {
    return exit_code;
  }
  const bool mpi = launchedByMpi(o);
  return launchRanks(o, [&](const Rank& rank) { return runRank(rank, o, mpi); });
}
