// The handshake at communicator creation: every rank describes its build and its choices, the
// descriptions are all-gathered through the bootstrap, and ranks that were built or configured
// differently fail together with a message naming the first rank that differs, instead of
// corrupting data later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/bootstrap.h"

namespace sccl {

// The engines a build contains (RankDescription::build_features).
enum BuildFeature : uint32_t {
  kFeatureMpi = 1u << 0,
  kFeatureUcx = 1u << 1,
  kFeatureNccl = 1u << 2,
  kFeatureCuda = 1u << 3,
};

// Facts about the calling process (RankDescription::process_flags).
enum ProcessFlag : uint32_t {
  kProcessMpiInitialised = 1u << 0,  // MPI_Init ran and MPI_Finalize has not
};

// What one rank tells the others. Fixed-width fields, version first so that even a different
// layout is reported as a version mismatch.
struct RankDescription {
  uint32_t library_version;  // SCCL_VERSION_CODE
  uint32_t build_features;   // bit mask of the engines built in (MPI, UCX, NCCL, CUDA)
  uint64_t process_nonce;    // random per process: equal values mean the same process
  int32_t pid;
  int32_t rank;
  uint32_t process_flags;   // ProcessFlag bits
  uint32_t ranks_per_node;  // SCCL_RANKS_PER_NODE (0: nodes by identity); the same on every rank
  char transport[32];       // the transport this rank asked for ("auto": comm/default_transport.h)
  char host[64];
  char node[64];  // the node identity: SCCL_NODE_ID, or the host name
};

RankDescription describeThisRank(int rank, const std::string& transport);

// All-gathers the descriptions and checks them; on success `all` holds every rank's.
scclResult_t exchangeRankDescriptions(Bootstrap& bootstrap, const RankDescription& mine,
                                      std::vector<RankDescription>* all);

// Text of the build features, e.g. "mpi,cuda".
std::string buildFeatureList(uint32_t features);
uint32_t thisBuildFeatures();

// The most ranks that named the same host (at least 1).
int mostRanksOnOneHost(const std::vector<RankDescription>& ranks);

// Which node each rank is on, nodes numbered in the order of their first rank: consecutive
// groups of ranks_per_node ranks where that is set, else ranks of the same node identity.
std::vector<int> nodeOfEachRank(const std::vector<RankDescription>& ranks);

// This process's node identity (SCCL_NODE_ID, or the host name) and how it was found.
std::string thisNodeIdentity(const char** source);

// Whether every rank is a thread of one process (the same process nonce).
bool everyRankInOneProcess(const std::vector<RankDescription>& ranks);

}  // namespace sccl
