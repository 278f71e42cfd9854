// allgather_padded_perf: the padded all-gather of (index, value) lists that MiCRO, ExDyna,
// Top-k and the hard threshold run every call (src/algorithms/gather_reduction.cc), and what
// imbalance between the ranks' selections costs it.
//
// Every rank selects k_r entries of its exclusive partition; a fixed-size all-gather needs the
// same size everywhere, so each list is padded to max_r k_r. With a hot partition (one rank
// holding imbalance x the mean) every rank receives (n - 1) max k_r entries instead of the
// sum of the others' k_r: ExDyna's block rebalancing exists to keep this inflation,
// n max k_r / sum k_r, near 1. Per size, density (k = density x count in all) and imbalance:
//   padded    all-gather of the counts (int64), then of the int64 index lists and of the value
//             lists, both padded to max k_r: the algorithms' exchange;
//   balanced  the same with every rank at ceil(k / n): what a perfectly balanced partition costs,
//             the baseline the padding is measured against;
//   allgatherv (under mpirun) MPI_Allgatherv of the exact lists (Open MPI), the peer that needs
//             no padding, in the same run.
// Profile: rank 0 holds min(imbalance, n) x k / n entries, the others share the rest equally.
// Times: each rank's median over -n rounds (a barrier before each operation, round-robin), the
// slowest rank's median reported. Check (-c 1): every received (index, value) of every rank's
// list equals the sender's, bit for bit, and no padding entry is read; #wrong summed over ranks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
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

struct PaddedOptions {
  SparseOptions launch;  // common options, -r, -M (the launcher of sparse_allreduce_perf)
  std::vector<double> imbalances{1, 1.5, 2, 4};
};

struct Lists {
  std::vector<int64_t> counts, indices_send, indices_recv;
  std::vector<unsigned char> values_send, values_recv, expected_value;
};

// Entry j of rank r: a distinct index in [0, count) and a value that fits every dtype exactly.
int64_t entryIndex(int r, size_t j, int n, size_t count) {
  return int64_t((j * size_t(n) + size_t(r)) % count);
}
double entryValue(int r, size_t j) {
  return double(r + 1) * 0.5 + double(j % 512);
}

std::vector<size_t> profile(size_t k_total, int n, double imbalance) {
  std::vector<size_t> k(size_t(n), 0);
  if (n == 1) {
    k[0] = k_total;
    return k;
  }
  const double mean = double(k_total) / double(n);
  k[0] = std::min(k_total, size_t(std::llround(std::min(imbalance, double(n)) * mean)));
  const size_t rest = k_total - k[0];
  for (int r = 1; r < n; ++r)
    k[size_t(r)] = rest / size_t(n - 1) + (size_t(r - 1) < rest % size_t(n - 1));
  return k;
}

void fillSend(Lists& l, const Rank& rank, size_t mine, size_t count, scclDataType_t dtype) {
  for (size_t j = 0; j < mine; ++j) {
    l.indices_send[j] = entryIndex(rank.rank, j, rank.nranks, count);
    storeValue(l.values_send.data(), dtype, j, entryValue(rank.rank, j));
  }
}

// The algorithms' exchange: counts, then padded index and value lists.
void paddedExchange(const Rank& rank, Lists& l, size_t mine, size_t pad, scclDataType_t dtype) {
  int64_t k = int64_t(mine);
  check(scclAllGather(&k, l.counts.data(), 1, scclInt64, rank.comm, nullptr), rank.comm,
        "scclAllGather(counts)");
  check(scclAllGather(l.indices_send.data(), l.indices_recv.data(), pad, scclInt64, rank.comm,
                      nullptr),
        rank.comm, "scclAllGather(indices)");
  check(scclAllGather(l.values_send.data(), l.values_recv.data(), pad, dtype, rank.comm, nullptr),
        rank.comm, "scclAllGather(values)");
}

#ifdef SCCL_PERF_WITH_MPI
MPI_Datatype mpiType(scclDataType_t dtype) {
  return dtype == scclFloat64 ? MPI_DOUBLE : dtype == scclFloat32 ? MPI_FLOAT : MPI_UINT16_T;
}

void allGatherV(const Rank& rank, Lists& l, size_t mine, scclDataType_t dtype) {
  long long k = (long long)mine;
  std::vector<long long> all(size_t(rank.nranks));
  MPI_Allgather(&k, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
  std::vector<int> counts(size_t(rank.nranks)), displs(size_t(rank.nranks));
  int offset = 0;
  for (int r = 0; r < rank.nranks; ++r) {
    counts[size_t(r)] = int(all[size_t(r)]);
    displs[size_t(r)] = offset;
    offset += counts[size_t(r)];
  }
  MPI_Allgatherv(l.indices_send.data(), int(mine), MPI_INT64_T, l.indices_recv.data(),
                 counts.data(), displs.data(), MPI_INT64_T, MPI_COMM_WORLD);
  MPI_Allgatherv(l.values_send.data(), int(mine), mpiType(dtype), l.values_recv.data(),
                 counts.data(), displs.data(), mpiType(dtype), MPI_COMM_WORLD);
}
#endif

// Received entries that differ from what their sender put in (only the first counts[r] of each
// padded list are compared: padding is never read).
size_t countWrong(const Rank& rank, const Lists& l, const std::vector<size_t>& k, size_t pad,
                  size_t count, scclDataType_t dtype) {
  const size_t width = dtypeSize(dtype);
  size_t wrong = 0;
  std::vector<unsigned char> expected(width);
  for (int r = 0; r < rank.nranks; ++r) {
    if (l.counts[size_t(r)] != int64_t(k[size_t(r)])) ++wrong;
    for (size_t j = 0; j < k[size_t(r)]; ++j) {
      const size_t slot = size_t(r) * pad + j;
      storeValue(expected.data(), dtype, 0, entryValue(r, j));
      if (l.indices_recv[slot] != entryIndex(r, j, rank.nranks, count)) ++wrong;
      if (std::memcmp(l.values_recv.data() + slot * width, expected.data(), width) != 0) ++wrong;
    }
  }
  return wrong;
}

double slowest(const Rank& rank, double mine) {
  const std::vector<double> all = rank.allGather({mine});
  return *std::max_element(all.begin(), all.end());
}

int runRank(const Rank& rank, const PaddedOptions& o) {
  const PerfOptions& common = o.launch.common;
  const bool mpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || o.launch.force_mpi;
  ResultTable table({{"count", "count", 11, -1},
                     {"type", "type", 6, 0},
                     {"density", "density", 7, 4},
                     {"imbal", "imbalance", 5, 2},
                     {"max k", "max_k", 9, -1},
                     {"mean k", "mean_k", 9, -1},
                     {"inflation", "inflation", 9, 3},
                     {"padded(us)", "padded_us", 10, 1},
                     {"balanced(us)", "balanced_us", 12, 1},
                     {"pad/bal", "padded_over_balanced", 7, 2},
                     {"gatherv(us)", "allgatherv_us", 11, 1},
                     {"recv pad(B)", "recv_padded_bytes", 12, -1},
                     {"recv exact(B)", "recv_exact_bytes", 13, -1},
                     {"#wrong", "wrong", 6, -1}});
  const KeyValues machine = machineDescription(common);
  if (rank.rank == 0) {
    KeyValues header = machine;
    header.push_back({"ranks", std::to_string(rank.nranks) + (mpi ? " (mpi)" : " (local)")});
    printKeyValues(stdout, header);
    table.printHeader(stdout);
  }
  const size_t width = dtypeSize(common.dtype);
  size_t total_wrong = 0;
  for (size_t count : elementCounts(common)) {
    for (double density : common.densities) {
      for (double imbalance : o.imbalances) {
        watchdogKick("padded all-gather at " + std::to_string(count) + " elements, imbalance " +
                     std::to_string(imbalance));
        const size_t k_total = std::max<size_t>(1, size_t(std::llround(density * double(count))));
        const std::vector<size_t> k = profile(k_total, rank.nranks, imbalance);
        const size_t pad = *std::max_element(k.begin(), k.end());
        const size_t even = (k_total + size_t(rank.nranks) - 1) / size_t(rank.nranks);
        const size_t capacity = std::max(pad, even);
        const size_t mine = k[size_t(rank.rank)];
        Lists l;
        l.counts.resize(size_t(rank.nranks));
        l.indices_send.assign(capacity, -1);
        l.values_send.assign(capacity * width, 0);
        l.indices_recv.assign(capacity * size_t(rank.nranks), -1);
        l.values_recv.assign(capacity * size_t(rank.nranks) * width, 0);
        fillSend(l, rank, capacity, count, common.dtype);
        auto padded = [&] {
          rank.barrier();
          paddedExchange(rank, l, mine, pad, common.dtype);
        };
        auto balanced = [&] {
          rank.barrier();
          paddedExchange(rank, l, even, even, common.dtype);
        };
        std::vector<Timing> t = timeInterleaved(common.warmup, common.iters, padded, balanced);
        double gatherv_us = -1;
#ifdef SCCL_PERF_WITH_MPI
        if (mpi && common.dtype != scclFloat16 && common.dtype != scclBfloat16) {
          gatherv_us = slowest(rank, timeIterations(common.warmup, common.iters, [&] {
                                       rank.barrier();
                                       allGatherV(rank, l, mine, common.dtype);
                                     }).median_us);
        }
#endif
        size_t wrong = 0;
        if (common.check) {
          paddedExchange(rank, l, mine, pad, common.dtype);
          double sum = 0;
          for (double w :
               rank.allGather({double(countWrong(rank, l, k, pad, count, common.dtype))}))
            sum += w;
          wrong = size_t(sum);
        }
        total_wrong += wrong;
        const double padded_us = slowest(rank, t[0].median_us);
        const double balanced_us = slowest(rank, t[1].median_us);
        // The most any rank receives without padding: all lists but its own.
        const double others = double(k_total - *std::min_element(k.begin(), k.end()));
        if (rank.rank == 0) {
          const double entry = double(8 + width);
          table.addRow({double(count), dtypeName(common.dtype), density, imbalance, double(pad),
                        double(k_total) / rank.nranks, double(pad) * rank.nranks / double(k_total),
                        padded_us, balanced_us, balanced_us > 0 ? padded_us / balanced_us : 0.0,
                        gatherv_us >= 0 ? Cell(gatherv_us) : Cell("N/A"),
                        double(rank.nranks - 1) * double(pad) * entry, others * entry,
                        common.check ? Cell(double(wrong)) : Cell("N/A")},
                       stdout);
        }
      }
    }
  }
  if (rank.rank == 0) {
    std::printf(
        "# recv pad(B) / recv exact(B): the most any rank receives with / without padding "
        "| wrong entries: %zu %s\n",
        total_wrong, total_wrong ? "FAILED" : "OK");
    if (!common.json_path.empty() &&
        !table.writeJson(common.json_path, "allgather_padded_perf", machine,
                         {{"ranks", std::to_string(rank.nranks)}})) {
      std::fprintf(stderr, "cannot write %s\n", common.json_path.c_str());
      return 1;
    }
  }
  return total_wrong ? 1 : 0;
}

bool parseImbalances(const char* text, std::vector<double>* out) {
  out->clear();
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(value >= 1 && value <= 1024)) return false;
    out->push_back(value);
  }
  return !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
  PaddedOptions o;
  o.launch.algorithms.clear();
  o.launch.common.min_size = o.launch.common.max_size = 26000000;
  o.launch.common.sizes_are_elements = true;
  o.launch.common.iters = 10;
  std::vector<ExtraFlag> extra = {
      {'I', "LIST   imbalances: rank 0 holds this multiple of the mean k [1,1.5,2,4]",
       [&](const char* text) { return parseImbalances(text, &o.imbalances); }},
      {'r', "N      in-process ranks (threads, transport local) when not under mpirun [4]",
       [&](const char* text) { return (o.launch.local_ranks = std::atoi(text)) >= 1; }},
      {'M', "0|1    1: use MPI (scclCommInitMpi) even where no mpirun is detected [0]",
       [&](const char* text) {
         o.launch.force_mpi = std::strcmp(text, "1") == 0;
         return o.launch.force_mpi || std::strcmp(text, "0") == 0;
       }}};
  int exit_code = 0;
  if (!parseOptions(argc, argv,
                    "padded all-gather of (index, value) lists under rank imbalance, against a "
                    "balanced one and MPI_Allgatherv; sizes are elements of the gradient (-u)",
                    extra, &o.launch.common, &exit_code)) {
    return exit_code;
  }
  return launchRanks(o.launch, [&](const Rank& rank) { return runRank(rank, o); });
}
