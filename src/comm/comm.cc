// Communicator creation and destruction.
#include "comm/comm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "comm/comm_compatibility.h"
#include "comm/default_transport.h"
#include "core/config_header.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/settings.h"
#include "transports/transport_registry.h"

namespace sccl {
namespace {

// The settings a communicator runs with, resolved from config, environment and defaults.
struct ResolvedConfig {
  std::string transport;
  // An inherited transport (a split's child): "local" instead when every rank is one process's.
  bool local_in_one_process = false;
  int64_t timeout_ms = 0;
  std::string name;
};

std::string knownTransportList() {
  std::string list;
  for (const TransportEntry& entry : transportRegistry()) {
    if (!list.empty()) list += ", ";
    list += entry.name;
  }
  return list;
}

scclResult_t checkConfigHeader(const scclConfig_t* config) {
  SCCL_REQUIRE_ARG(config->magic == SCCL_CONFIG_MAGIC,
                   "config was not initialised with SCCL_CONFIG_INITIALIZER (magic 0x%x)",
                   config->magic);
  // Fields are appended over versions (core/config_header.h); 0.1.0's struct ends at commName.
  return checkConfigVersionAndSize("config", config->size, config->version,
                                   offsetof(scclConfig_t, commName) + sizeof(config->commName),
                                   sizeof(scclConfig_t));
}

scclResult_t resolveConfig(const CommInitRequest& request, ResolvedConfig* resolved) {
  const scclConfig_t* config = request.config;
  if (config != nullptr) SCCL_CHECK(checkConfigHeader(config));
  const InheritedSettings* inherited = request.inherited;
  if (config != nullptr && config->transport != nullptr) {
    resolved->transport = config->transport;
  } else if (inherited != nullptr) {
    resolved->transport = inherited->transport;
    resolved->local_in_one_process = true;
  } else if (!paramTransport().empty()) {
    resolved->transport = paramTransport();
  } else {
    resolved->transport = request.default_transport;
  }
  if (resolved->transport != kAutoTransport && findTransport(resolved->transport) == nullptr) {
    bool known_elsewhere = resolved->transport == "mpi" || resolved->transport == "ucx" ||
                           resolved->transport == "nccl";
    return fail(known_elsewhere ? scclInvalidUsage : scclInvalidArgument,
                "transport '%s' is not %s (this build has: %s)", resolved->transport.c_str(),
                known_elsewhere ? "built into this library" : "a sparsecoll transport",
                knownTransportList().c_str());
  }
  resolved->timeout_ms = inherited != nullptr ? inherited->timeout_ms : paramTimeoutMs();
  if (config != nullptr && config->timeoutMs != SCCL_CONFIG_UNDEF_INT) {
    SCCL_REQUIRE_ARG(config->timeoutMs > 0, "config timeoutMs %d must be > 0", config->timeoutMs);
    resolved->timeout_ms = config->timeoutMs;
  }
  SCCL_REQUIRE_ARG(resolved->timeout_ms > 0 && resolved->timeout_ms <= kMaxTimeoutMs,
                   "SCCL_TIMEOUT_MS %lld must be in [1, %lld] ms (at most about 24.8 days)",
                   static_cast<long long>(resolved->timeout_ms),
                   static_cast<long long>(kMaxTimeoutMs));
  if (config != nullptr && config->commName != nullptr) {
    resolved->name = config->commName;
  } else if (inherited != nullptr) {
    resolved->name = inherited->name;
  }
  return scclSuccess;
}

// What this rank tells the others it asked for: ranks that resolved the same transport
// differently (one named it in its config, another inherited it and may run "local" instead)
// must fail the handshake rather than create different transports.
std::string requestedTransportText(const ResolvedConfig& resolved) {
  return resolved.local_in_one_process ? resolved.transport + " (local in one process)"
                                       : resolved.transport;
}

scclResult_t checkSingleProcess(const std::vector<RankDescription>& ranks, const char* transport) {
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].process_nonce != ranks[0].process_nonce) {
      return fail(scclInvalidUsage,
                  "transport '%s' needs every rank in one process, but rank %zu is pid %d on %.64s "
                  "and rank 0 is pid %d on %.64s; use a multi-process transport (e.g. mpi)",
                  transport, r, ranks[r].pid, ranks[r].host, ranks[0].pid, ranks[0].host);
    }
  }
  return scclSuccess;
}

// INFO: this rank's node, how many ranks it holds and where the grouping came from.
void logNodes(const scclComm& comm, const std::vector<RankDescription>& ranks) {
  const int node = comm.node_of_rank[size_t(comm.rank)];
  const int nodes = *std::max_element(comm.node_of_rank.begin(), comm.node_of_rank.end()) + 1;
  const auto on_mine = std::count(comm.node_of_rank.begin(), comm.node_of_rank.end(), node);
  const RankDescription& mine = ranks[size_t(comm.rank)];
  SCCL_INFO(LogSubsys::Init, "rank %d/%d: node %d of %d (%lld rank(s) on it), by %s", comm.rank,
            comm.nranks, node, nodes, static_cast<long long>(on_mine),
            mine.ranks_per_node > 0
                ? ("SCCL_RANKS_PER_NODE=" + std::to_string(mine.ranks_per_node)).c_str()
                : ("node identity '" +
                   std::string(mine.node, strnlen(mine.node, sizeof(mine.node))) + "'")
                      .c_str());
}

}  // namespace

scclResult_t checkCommConfig(const CommInitRequest& request) {
  ResolvedConfig resolved;
  return resolveConfig(request, &resolved);
}

scclResult_t commCreate(const CommInitRequest& request, scclComm** out) {
  SCCL_REQUIRE_ARG(out != nullptr, "comm output pointer is NULL");
  SCCL_REQUIRE_ARG(request.id != nullptr, "unique id is NULL");
  SCCL_REQUIRE_ARG(request.nranks > 0, "nranks %d must be > 0", request.nranks);
  SCCL_REQUIRE_ARG(request.rank >= 0 && request.rank < request.nranks,
                   "rank %d out of range [0, %d)", request.rank, request.nranks);
  SCCL_REQUIRE_ARG(paramRanksPerNode() >= 0 && paramRanksPerNode() <= INT32_MAX,
                   "SCCL_RANKS_PER_NODE %lld must be >= 0 (0: nodes by host identity)",
                   static_cast<long long>(paramRanksPerNode()));
  ResolvedConfig resolved;
  SCCL_CHECK(resolveConfig(request, &resolved));

  auto comm = std::make_unique<scclComm>();
  comm->rank = request.rank;
  comm->nranks = request.nranks;
  comm->timeout_ms = resolved.timeout_ms;
  comm->name = resolved.name;
  SCCL_CHECK(Bootstrap::connect(*request.id, request.rank, request.nranks, resolved.timeout_ms,
                                &comm->bootstrap));
  std::vector<RankDescription> ranks;
  SCCL_CHECK(exchangeRankDescriptions(
      *comm->bootstrap, describeThisRank(request.rank, requestedTransportText(resolved)), &ranks));
  comm->ranks_per_host = mostRanksOnOneHost(ranks);
  comm->node_of_rank = nodeOfEachRank(ranks);
  logNodes(*comm, ranks);
  std::string transport_name = resolved.transport;
  if (resolved.local_in_one_process && everyRankInOneProcess(ranks)) transport_name = "local";
  if (transport_name == kAutoTransport) {
    TransportChoice choice;
    SCCL_CHECK(chooseDefaultTransport(ranks, &choice));
    SCCL_INFO(LogSubsys::Init, "rank %d/%d: no transport named, chose %s (%s)", request.rank,
              request.nranks, choice.name.c_str(), choice.reason.c_str());
    transport_name = choice.name;
  }
  const TransportEntry* entry = findTransport(transport_name);
  if (entry == nullptr) {
    return fail(scclInternalError, "transport '%s' is not registered", transport_name.c_str());
  }
  if (entry->single_process) SCCL_CHECK(checkSingleProcess(ranks, entry->name));

  TransportSetup setup;
  setup.rank = request.rank;
  setup.nranks = request.nranks;
  setup.timeout_ms = resolved.timeout_ms;
  setup.bootstrap = comm->bootstrap.get();
  setup.mpi_comm = request.mpi_comm;
  setup.comm_name = resolved.name;
  SCCL_CHECK(entry->create(setup, &comm->transport));

  SCCL_INFO(LogSubsys::Init, "comm %p%s%s rank %d/%d transport %s timeout %lld ms ready",
            static_cast<void*>(comm.get()), comm->name.empty() ? "" : " ", comm->name.c_str(),
            comm->rank, comm->nranks, entry->name, static_cast<long long>(comm->timeout_ms));
  registerHandle(comm.get(), scclComm::kMagic);
  *out = comm.release();
  return scclSuccess;
}

void commDestroy(scclComm* comm, bool abort) {
  unregisterHandle(comm);
  if (abort && comm->transport) comm->transport->abort();
  comm->magic = 0;
  delete comm;
}

scclResult_t commRecordFailure(scclComm* comm, scclResult_t result) {
  if (result != scclSuccess && result != scclInvalidArgument) {
    scclResult_t expected = scclSuccess;
    comm->async_error.compare_exchange_strong(expected, result);
  }
  return result;
}

}  // namespace sccl
