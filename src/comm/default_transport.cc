#include "comm/default_transport.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "core/error.h"

namespace sccl {
namespace {

std::string hostOf(const RankDescription& rank) {
  return std::string(rank.host, strnlen(rank.host, sizeof(rank.host)));
}

// The first rank whose process has not initialised MPI, or -1.
int firstRankWithoutMpi(const std::vector<RankDescription>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    if ((ranks[r].process_flags & kProcessMpiInitialised) == 0) return static_cast<int>(r);
  }
  return -1;
}

}  // namespace

scclResult_t chooseDefaultTransport(const std::vector<RankDescription>& ranks,
                                    TransportChoice* choice) {
  SCCL_REQUIRE_ARG(!ranks.empty(), "no rank descriptions to choose a transport from");
  std::set<uint64_t> processes;
  std::set<std::string> hosts;
  for (const RankDescription& rank : ranks) {
    processes.insert(rank.process_nonce);
    hosts.insert(hostOf(rank));
  }
  const size_t nranks = ranks.size();
  char where[160];
  std::snprintf(where, sizeof(where), "%zu rank%s in %zu process%s on %zu host%s", nranks,
                nranks == 1 ? "" : "s", processes.size(), processes.size() == 1 ? "" : "es",
                hosts.size(), hosts.size() == 1 ? "" : "s");
  if (processes.size() == 1) {
    *choice = {"local", std::string(where) + ": every rank is a thread of one process"};
    return scclSuccess;
  }
  // The descriptions agree on the build (checked before this runs), so rank 0's features are
  // every rank's.
  const uint32_t features = ranks[0].build_features;
  if ((features & kFeatureUcx) != 0) {
    *choice = {"ucx", std::string(where) + ": UCX is built in and needs no launcher"};
    return scclSuccess;
  }
  const bool mpi_built = (features & kFeatureMpi) != 0;
  const int without_mpi = firstRankWithoutMpi(ranks);
  if (mpi_built && without_mpi < 0 && processes.size() == nranks) {
    *choice = {"mpi", std::string(where) +
                          ": no UCX in this build, and every rank's process has initialised MPI"};
    return scclSuccess;
  }
  std::string missing;
  if (!mpi_built) {
    missing = "this build has neither UCX nor MPI";
  } else if (without_mpi >= 0) {
    missing = "this build has no UCX, and MPI is not initialised in rank " +
              std::to_string(without_mpi) + "'s process (call MPI_Init first)";
  } else {
    missing = "this build has no UCX, and the mpi transport needs one rank per process";
  }
  return fail(scclInvalidUsage,
              "no transport for %s: %s; name one with SCCL_TRANSPORT or the config's transport "
              "(built with: %s)",
              where, missing.c_str(), buildFeatureList(features).c_str());
}

}  // namespace sccl
