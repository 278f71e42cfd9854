// Uses library internals (links sparsecoll_objects): the communicator and its call agreement.
// call_agreement_perf: what call agreement (comm/call_agreement.h) costs a dense all-reduce. Three
// ways of running the same all-reduce, interleaved round-robin so that load bursts hit all of
// them alike:
//   transport  the communicator's transport called directly: no agreement, no API checks;
//   agreed     the same with the call record agreed first (runAgreedCall: folded into the first
//              barrier in-process, an all-gather of 64 bytes on the other transports);
//   api        scclAllReduce, what a user calls (argument checks + agreement + transport);
//   exchange   the explicit agreement alone (agreeOnCall: a one-barrier exchange in-process, a
//              64-byte all-gather elsewhere), what the sparse all-reduce, sparsifier and event
//              communicator creation and a synchronous EventGraD step pay before their own work.
// The overhead is agreed - transport (median of each, in microseconds, and as a ratio).
// In-process ranks are threads (-r ranks); under mpirun (one rank per process) the communicator
// is scclCommInitMpi's, over SCCL_TRANSPORT (mpi by default, ucx). Links the library's objects
// for the internal calls. Every rank runs the same sequence; rank 0 prints.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/timing.h"
#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "sparsecoll/sparsecoll.h"
#ifdef SCCL_PERF_WITH_MPI
#include <mpi.h>
#endif

namespace {

using namespace sccl_perf;

struct Row {
  size_t bytes = 0;
  Timing transport, agreed, api, exchange;
};

// The three ways, interleaved, at every size; every rank calls this with the same options.
std::vector<Row> measure(scclComm_t comm, const PerfOptions& options,
                         const std::vector<size_t>& sizes) {
  std::vector<Row> rows;
  const size_t largest = sizes.empty() ? 0 : sizes.back();
  std::vector<float> send(largest / sizeof(float) + 1, 1.0f), recv(send.size(), 0.0f);
  for (size_t bytes : sizes) {
    const size_t count = bytes / sizeof(float);
    sccl::CallRecord record = sccl::callRecord(sccl::CallOperation::AllReduce);
    record.count = count;
    record.dtype = static_cast<int16_t>(scclFloat32);
    record.redop = static_cast<int16_t>(scclSum);
    bool ok = true;
    auto direct = [&] {
      ok &= comm->transport->allReduce(send.data(), recv.data(), count, scclFloat32,
                                       sccl::ReduceOp::Sum) == scclSuccess;
    };
    auto agreed = [&] {
      ok &= sccl::runAgreedCall(comm, record, *comm->transport, [&](sccl::Transport& t) {
              return t.allReduce(send.data(), recv.data(), count, scclFloat32, sccl::ReduceOp::Sum);
            }) == scclSuccess;
    };
    auto exchange = [&] { ok &= sccl::agreeOnCall(comm, record) == scclSuccess; };
    auto api = [&] {
      ok &= scclAllReduce(send.data(), recv.data(), count, scclFloat32, scclSum, comm, nullptr) ==
            scclSuccess;
    };
    // Small messages: many more iterations, so that the median is stable.
    const int iters = bytes <= 65536 ? options.iters * 100 : options.iters;
    std::vector<Timing> t = timeInterleaved(options.warmup, iters, direct, agreed, api, exchange);
    if (!ok) {
      std::fprintf(stderr, "call_agreement_perf: an all-reduce failed: %s\n",
                   scclGetLastError(comm));
      std::exit(1);
    }
    rows.push_back({bytes, t[0], t[1], t[2], t[3]});
  }
  return rows;
}

void report(const std::vector<Row>& rows, const PerfOptions& options, const char* transport,
            int nranks) {
  std::printf("# call_agreement_perf: dense all-reduce of float32, %d ranks over %s\n", nranks,
              transport);
  printKeyValues(stdout, machineDescription(options));
  std::printf("# times in us: medians of interleaved rounds (%d rounds; x100 up to 64 KiB)\n",
              options.iters);
  ResultTable table({{"bytes", "bytes", 10, -1},
                     {"transport", "transport_us", 10, 2},
                     {"agreed", "agreed_us", 9, 2},
                     {"api", "api_us", 9, 2},
                     {"overhead", "overhead_us", 9, 2},
                     {"ratio", "agreed_over_transport", 7, 4},
                     {"exchange", "exchange_us", 9, 2}});
  table.printHeader(stdout);
  for (const Row& row : rows) {
    table.addRow({double(row.bytes), row.transport.median_us, row.agreed.median_us,
                  row.api.median_us, row.agreed.median_us - row.transport.median_us,
                  row.agreed.median_us / row.transport.median_us, row.exchange.median_us},
                 stdout);
  }
  if (!options.json_path.empty()) {
    KeyValues run = {{"transport", transport}, {"ranks", std::to_string(nranks)}};
    table.writeJson(options.json_path, "call_agreement_perf", machineDescription(options), run);
  }
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = 8;
  options.max_size = 64u << 20;
  options.step_factor = 8388608;  // 8 B and 64 MiB by default
  options.iters = 30;
  options.warmup = 3;
  int ranks = 2;
  int exit_code = 0;
  if (!parseOptions(argc, argv, "the cost of call agreement on a dense all-reduce",
                    {{'r', "in-process ranks (threads; ignored under mpirun)",
                      [&](const char* v) { return (ranks = std::atoi(v)) >= 1; }}},
                    &options, &exit_code)) {
    return exit_code;
  }
  std::vector<size_t> sizes;
  for (size_t count : elementCounts(options)) sizes.push_back(count * sizeof(float));
  const bool under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  if (under_mpirun) {
#ifdef SCCL_PERF_WITH_MPI
    MPI_Init(&argc, &argv);
    scclComm_t comm = nullptr;
    if (scclCommInitMpi(&comm, nullptr, nullptr) != scclSuccess) {
      std::fprintf(stderr, "scclCommInitMpi: %s\n", scclGetLastError(nullptr));
      return 1;
    }
    std::vector<Row> rows = measure(comm, options, sizes);
    if (comm->rank == 0) report(rows, options, comm->transport->name(), comm->nranks);
    scclCommDestroy(comm);
    MPI_Finalize();
    return 0;
#else
    std::fprintf(stderr, "call_agreement_perf: built without MPI\n");
    return 1;
#endif
  }
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) return 1;
  std::vector<std::vector<Row>> rows(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      scclComm_t comm = nullptr;
      if (scclCommInitRank(&comm, ranks, id, r) != scclSuccess) std::exit(1);
      rows[static_cast<size_t>(r)] = measure(comm, options, sizes);
      scclCommDestroy(comm);
    });
  }
  for (std::thread& thread : threads) thread.join();
  report(rows[0], options, "local", ranks);
  return 0;
}
