#include "comm/comm_compatibility.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "comm/comm.h"
#include "core/error.h"
#include "core/settings.h"
#include "sccl_build_config.h"

namespace sccl {
namespace {

uint64_t processNonce() {
  static const uint64_t nonce = [] {
    std::random_device device;
    return (uint64_t(device()) << 32) ^ device() ^ uint64_t(getpid());
  }();
  return nonce;
}

std::string fieldText(const char* field, size_t size) {
  return std::string(field, strnlen(field, size));
}

// Fails naming the first rank whose build or transport choice differs from rank 0's.
scclResult_t checkAgainstRankZero(const std::vector<RankDescription>& all) {
  const RankDescription& first = all[0];
  for (size_t r = 1; r < all.size(); ++r) {
    const RankDescription& other = all[r];
    if (other.library_version != first.library_version ||
        other.build_features != first.build_features) {
      return fail(scclInvalidUsage,
                  "rank %zu runs sparsecoll %u built with {%s} but rank 0 runs %u built with {%s}; "
                  "every rank must use the same build",
                  r, other.library_version, buildFeatureList(other.build_features).c_str(),
                  first.library_version, buildFeatureList(first.build_features).c_str());
    }
    if (other.ranks_per_node != first.ranks_per_node) {
      return fail(scclInvalidUsage,
                  "rank %zu has SCCL_RANKS_PER_NODE=%u but rank 0 has %u; it must be the same "
                  "on every rank",
                  r, other.ranks_per_node, first.ranks_per_node);
    }
    if (std::strncmp(other.transport, first.transport, sizeof(first.transport)) != 0) {
      return fail(scclInvalidUsage, "rank %zu asked for transport '%s' but rank 0 for '%s'", r,
                  fieldText(other.transport, sizeof(other.transport)).c_str(),
                  fieldText(first.transport, sizeof(first.transport)).c_str());
    }
  }
  return scclSuccess;
}

}  // namespace

uint32_t thisBuildFeatures() {
  return (SCCL_BUILD_WITH_MPI ? kFeatureMpi : 0u) | (SCCL_BUILD_WITH_UCX ? kFeatureUcx : 0u) |
         (SCCL_BUILD_WITH_NCCL ? kFeatureNccl : 0u) | (SCCL_BUILD_WITH_CUDA ? kFeatureCuda : 0u);
}

std::string buildFeatureList(uint32_t features) {
  std::string text;
  const std::pair<uint32_t, const char*> names[] = {
      {kFeatureMpi, "mpi"}, {kFeatureUcx, "ucx"}, {kFeatureNccl, "nccl"}, {kFeatureCuda, "cuda"}};
  for (const auto& [bit, name] : names) {
    if ((features & bit) == 0) continue;
    if (!text.empty()) text += ",";
    text += name;
  }
  return text.empty() ? "host only" : text;
}

RankDescription describeThisRank(int rank, const std::string& transport) {
  RankDescription mine{};
  mine.library_version = SCCL_VERSION_CODE;
  mine.build_features = thisBuildFeatures();
  mine.process_nonce = processNonce();
  mine.pid = static_cast<int32_t>(getpid());
  mine.rank = rank;
  mine.process_flags = mpiInitialisedInThisProcess() ? kProcessMpiInitialised : 0u;
  std::strncpy(mine.transport, transport.c_str(), sizeof(mine.transport) - 1);
  gethostname(mine.host, sizeof(mine.host) - 1);
  const char* source = nullptr;
  std::strncpy(mine.node, thisNodeIdentity(&source).c_str(), sizeof(mine.node) - 1);
  // Negative values are refused at creation (commCreate) before this is exchanged.
  mine.ranks_per_node =
      static_cast<uint32_t>(std::clamp<int64_t>(paramRanksPerNode(), 0, INT32_MAX));
  return mine;
}

scclResult_t exchangeRankDescriptions(Bootstrap& bootstrap, const RankDescription& mine,
                                      std::vector<RankDescription>* all) {
  std::vector<RankDescription> gathered(static_cast<size_t>(bootstrap.nranks()));
  SCCL_CHECK(bootstrap.allGather(&mine, gathered.data(), sizeof(RankDescription)));
  for (size_t r = 0; r < gathered.size(); ++r) {
    // The rank field comes from the peer: it must say what the bootstrap says.
    if (gathered[r].rank != static_cast<int32_t>(r)) {
      return fail(scclRemoteError, "rank %zu described itself as rank %d", r, gathered[r].rank);
    }
  }
  SCCL_CHECK(checkAgainstRankZero(gathered));
  *all = std::move(gathered);
  return scclSuccess;
}

int mostRanksOnOneHost(const std::vector<RankDescription>& ranks) {
  std::map<std::string, int> per_host;
  int most = 1;
  for (const RankDescription& r : ranks) {
    const std::string host(r.host, strnlen(r.host, sizeof(r.host)));
    most = std::max(most, ++per_host[host]);
  }
  return most;
}

std::string thisNodeIdentity(const char** source) {
  if (!paramNodeId().empty()) {
    *source = "SCCL_NODE_ID";
    return paramNodeId().substr(0, 63);
  }
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  *source = "host name";
  return host;
}

std::vector<int> nodeOfEachRank(const std::vector<RankDescription>& ranks) {
  std::vector<int> node(ranks.size(), 0);
  const uint32_t per_node = ranks.empty() ? 0 : ranks.front().ranks_per_node;
  std::map<std::string, int> numbers;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (per_node > 0) {
      node[r] = static_cast<int>(r / per_node);
      continue;
    }
    const std::string identity = fieldText(ranks[r].node, sizeof(ranks[r].node));
    auto found = numbers.emplace(identity, static_cast<int>(numbers.size())).first;
    node[r] = found->second;
  }
  return node;
}

bool everyRankInOneProcess(const std::vector<RankDescription>& ranks) {
  for (const RankDescription& r : ranks) {
    if (r.process_nonce != ranks.front().process_nonce) return false;
  }
  return true;
}

}  // namespace sccl
