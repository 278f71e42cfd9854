#include "tuning/link_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "core/settings.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSmallCalls = 5;
constexpr int kBulkCalls = 2;
constexpr size_t kBulkElements = 64 * 1024;  // float32: 256 KiB

// Seconds of each of `calls` timed all-reduces after one warm-up (*warmup: its seconds).
scclResult_t timedAllReduces(Transport& transport, void* data, size_t count, scclDataType_t dtype,
                             int calls, double* warmup, std::vector<double>* seconds) {
  for (int call = 0; call <= calls; ++call) {
    const Clock::time_point start = Clock::now();
    SCCL_CHECK(transport.allReduce(data, data, count, dtype, ReduceOp::Sum));
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (call == 0) {
      *warmup = elapsed;
    } else {
      seconds->push_back(elapsed);
    }
  }
  return scclSuccess;
}

// " 1.20 0.85 ..." (milliseconds).
std::string millisecondsList(const std::vector<double>& seconds) {
  std::string text;
  char part[32];
  for (double s : seconds) {
    std::snprintf(part, sizeof(part), " %.2f", s * 1e3);
    text += part;
  }
  return text;
}

// This rank's calls, for SCCL_DEBUG=INFO: where a probe's time went. The warm-ups hold the
// transport's first use of its connections at each size (at 8 emulated nodes on 2 vCPUs the first
// 256 KiB all-reduce took 26-45 ms of a 55-80 ms probe; docs/results/cost_model.md).
void logProbeCalls(const scclComm& comm, const GivenLink& given, double small_warmup,
                   const std::vector<double>& small, double bulk_warmup,
                   const std::vector<double>& bulk, double total) {
  char small_text[160] = "8-byte all-reduces skipped (SCCL_LINK_LATENCY_NS given)";
  char bulk_text[160] = "256 KiB ones skipped (SCCL_LINK_RATE_MBITS given)";
  if (!given.hasLatency())
    std::snprintf(small_text, sizeof(small_text), "8-byte all-reduces warm-up %.2f ms then%s ms",
                  small_warmup * 1e3, millisecondsList(small).c_str());
  if (!given.hasRate())
    std::snprintf(bulk_text, sizeof(bulk_text), "256 KiB warm-up %.2f ms then%s ms",
                  bulk_warmup * 1e3, millisecondsList(bulk).c_str());
  SCCL_INFO(LogSubsys::Coll, "rank %d: link probe %.1f ms: %s; %s", comm.rank, total * 1e3,
            small_text, bulk_text);
}

// See LinkProbe::ranks_per_machine.
int coreSharing(int ranks_per_host) {
  const int hardware = std::max(1, int(std::thread::hardware_concurrency()));
  const int64_t configured = paramCpuThreads();
  const int per_rank = configured > 0 ? int(std::min<int64_t>(configured, hardware)) : hardware;
  return std::max(1, (ranks_per_host * per_rank + hardware - 1) / hardware);
}

// The measurements of a probe among n > 1 ranks, those the settings did not give, then one
// all-reduce that gives every rank the slowest rank's view (and the largest core sharing).
scclResult_t measureLink(scclComm* comm, const GivenLink& given, LinkProbe* probe) {
  const Clock::time_point start = Clock::now();
  const int n = comm->nranks;
  Transport& transport = *comm->transport;
  std::vector<double> small, large;
  double small_warmup = 0, large_warmup = 0;
  if (!given.hasLatency()) {
    uint64_t word = 0;
    SCCL_CHECK(commRecordFailure(comm, timedAllReduces(transport, &word, 1, scclUint64,
                                                       kSmallCalls, &small_warmup, &small)));
  }
  if (!given.hasRate()) {
    std::vector<float> block(kBulkElements, 0.0f);
    SCCL_CHECK(
        commRecordFailure(comm, timedAllReduces(transport, block.data(), block.size(),
                                                scclFloat32, kBulkCalls, &large_warmup, &large)));
  }
  const std::vector<double> small_in_order = small;
  std::sort(small.begin(), small.end());
  // The slowest rank's view, in nanoseconds, so that every rank derives the same model.
  const double small_s = small.empty() ? 0 : small[small.size() / 2];
  const double large_s = large.empty() ? 0 : *std::min_element(large.begin(), large.end());
  uint64_t agreed[3] = {uint64_t(small_s * 1e9), uint64_t(large_s * 1e9),
                        uint64_t(probe->ranks_per_machine)};
  SCCL_CHECK(
      commRecordFailure(comm, transport.allReduce(agreed, agreed, 3, scclUint64, ReduceOp::Max)));
  // From the peers: a host holds at most every rank of the communicator.
  probe->ranks_per_machine = int(std::clamp<uint64_t>(agreed[2], 1, uint64_t(n)));
  const double steps = std::ceil(std::log2(double(n)));
  probe->link = {double(agreed[0]) * 1e-9 / steps, 0.0};
  applyGivenLink(given, &probe->link);
  if (!given.hasRate()) {
    const double moved = 2.0 * double(n - 1) / double(n) * double(kBulkElements * sizeof(float));
    // Timing noise can make the bulk call look no slower than its latency terms; at least half
    // of it is then counted as transfer, so that beta stays a rate this transport has shown.
    const double bulk = double(agreed[1]) * 1e-9;
    const double transfer = std::max(bulk - 2 * steps * probe->link.latency_s, 0.5 * bulk);
    probe->link.bytes_per_s = moved / transfer;
  }
  logProbeCalls(*comm, given, small_warmup, small_in_order, large_warmup, large,
                std::chrono::duration<double>(Clock::now() - start).count());
  return scclSuccess;
}

}  // namespace

scclResult_t probeLink(scclComm* comm, const GivenLink& given, LinkProbe* out) {
  const Clock::time_point start = Clock::now();
  LinkProbe probe;
  probe.given = given;
  if (comm->link_probed) {
    probe.link = {comm->probed_latency_s, comm->probed_bytes_per_s};
    probe.ranks_per_machine = comm->probed_ranks_per_machine;
    probe.reused = true;
    // Given values win over the stored link (the same ones in a process: settings are read once).
    applyGivenLink(given, &probe.link);
    *out = probe;
    return scclSuccess;
  }
  probe.ranks_per_machine = coreSharing(comm->ranks_per_host);
  const int n = comm->nranks;
  if (n <= 1) {
    probe.link = {0.0, 1e18};
  } else {
    SCCL_CHECK(measureLink(comm, given, &probe));
  }
  probe.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  comm->link_probed = true;
  comm->probed_latency_s = probe.link.latency_s;
  comm->probed_bytes_per_s = probe.link.bytes_per_s;
  comm->probed_ranks_per_machine = probe.ranks_per_machine;
  *out = probe;
  return scclSuccess;
}

std::string describeLinkProbe(const LinkProbe& probe) {
  // Given values are used even on reuse (probeLink), so "given" comes first.
  const char* source = "probed";
  if (probe.given.hasLatency() && probe.given.hasRate()) {
    source = "given";
  } else if (probe.reused) {
    source = "reused";
  } else if (probe.given.hasLatency()) {
    source = "given latency, probed rate";
  } else if (probe.given.hasRate()) {
    source = "probed latency, given rate";
  }
  char text[120];
  std::snprintf(text, sizeof(text), "alpha %.1f us, %.3g Gbit/s (%s)", probe.link.latency_s * 1e6,
                probe.link.bytes_per_s * 8e-9, source);
  return text;
}

}  // namespace sccl
