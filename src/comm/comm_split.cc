// scclCommSplit: every step is collective over the parent, and every rank decides from the same
// gathered data, so the ranks never disagree about what happened.
//  1. Each rank checks its own arguments (color, newcomm, config: the checks of
//     scclCommInitRankConfig) and the ranks all-gather (color, key, the check's result) over the
//     parent's transport as an agreed call (CallOperation::CommSplit): a rank that entered another
//     collective makes every rank refuse with scclInvalidUsage. Color and key differ between
//     ranks by design, so they are data here, not part of the call record. A rank whose check
//     failed returns its own error, every other rank an error naming it; nothing is created.
//  2. The groups: the ranks of one color, ordered by (key, parent rank). Each group's new rank 0
//     (its leader) creates a unique id, and the ranks all-gather one id-sized slot each over the
//     parent's transport (non-leaders send zeros); each member takes its leader's.
//  3. Each member joins its group through the ordinary creation (commCreate): its own bootstrap
//     and transport, so the child outlives the parent and either may be destroyed or aborted
//     first. Transport: the config's, else "local" when the members are threads of one process,
//     else the parent's (comm.h, InheritedSettings); timeout and name likewise.
// On the parent's transport: the agreement, then 16 and 136 bytes per rank in two all-gathers.
// Two rounds, because a rank learns whether it leads a group only from the first; ids made
// speculatively by every rank would each hold a listening socket until the bootstrap timeout.
#include "comm/comm_split.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/call_agreement.h"
#include "core/error.h"
#include "core/log.h"
#include "transports/bootstrap/bootstrap.h"

namespace sccl {
namespace {

// One rank's part of the first exchange. Fixed-width fields, no padding.
struct SplitEntry {
  int32_t color;
  int32_t key;
  int32_t checked;  // scclResult_t of this rank's own argument checks
  int32_t reserved;
};

// One rank's part of the second exchange: a group leader's unique id, zeros from the others.
struct IdSlot {
  int32_t is_leader;
  int32_t created;  // scclResult_t of the leader's bootstrapCreateUniqueId
  scclUniqueId id;
};

// This rank's place: the parent ranks of its group in their new rank order, and its own index.
struct Group {
  std::vector<int> members;
  int position = -1;
};

bool isValidColor(int color) {
  return color >= 0 || color == SCCL_SPLIT_NOCOLOR;
}

scclResult_t checkOwnArguments(const scclComm* parent, int color, scclComm** newcomm,
                               const CommInitRequest& child) {
  SCCL_REQUIRE_ARG(newcomm != nullptr, "scclCommSplit on rank %d: newcomm pointer is NULL",
                   parent->rank);
  SCCL_REQUIRE_ARG(isValidColor(color),
                   "scclCommSplit on rank %d: color %d is invalid; pass a color >= 0, or "
                   "SCCL_SPLIT_NOCOLOR (%d) to take no part",
                   parent->rank, color, SCCL_SPLIT_NOCOLOR);
  // A NOCOLOR rank's config is checked too: it is the same call with the same contract.
  const scclResult_t config_checked =
      child.config != nullptr ? checkCommConfig(child) : scclSuccess;
  if (config_checked != scclSuccess) {
    const std::string why = threadLastError();
    return fail(config_checked, "scclCommSplit on rank %d: %s", parent->rank, why.c_str());
  }
  return scclSuccess;
}

scclResult_t exchangeEntries(scclComm* parent, const SplitEntry& mine,
                             std::vector<SplitEntry>* all) {
  all->assign(static_cast<size_t>(parent->nranks), SplitEntry{});
  return runAgreedCall(parent, callRecord(CallOperation::CommSplit), *parent->transport,
                       [&](Transport& transport) {
                         return transport.allGather(&mine, all->data(), sizeof(SplitEntry));
                       });
}

// The verdict of step 1, the same on every rank. `own_error` is this rank's check's text.
scclResult_t judgeEntries(const std::vector<SplitEntry>& all, int my_rank,
                          const std::string& own_error) {
  const auto mine = static_cast<scclResult_t>(all[static_cast<size_t>(my_rank)].checked);
  if (mine != scclSuccess) {
    return fail(mine, "%s (every rank of the communicator returns an error; none was created)",
                own_error.c_str());
  }
  for (size_t r = 0; r < all.size(); ++r) {
    const auto checked = static_cast<scclResult_t>(all[r].checked);
    if (checked != scclSuccess) {
      return fail(scclInvalidUsage,
                  "scclCommSplit: rank %zu of the communicator passed arguments its checks "
                  "refused (%s; its scclGetLastError says which); no rank created a communicator "
                  "and this one stays usable",
                  r, resultName(checked));
    }
    if (!isValidColor(all[r].color)) {  // a peer's data: bounded before it is used
      return fail(scclRemoteError, "scclCommSplit: rank %zu sent color %d, which is no color", r,
                  all[r].color);
    }
  }
  return scclSuccess;
}

Group groupOf(const std::vector<SplitEntry>& all, int my_rank) {
  Group group;
  const int32_t color = all[static_cast<size_t>(my_rank)].color;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].color == color) group.members.push_back(static_cast<int>(r));
  }
  // Stable: equal keys keep the parent's rank order.
  std::stable_sort(group.members.begin(), group.members.end(),
                   [&](int a, int b) { return all[size_t(a)].key < all[size_t(b)].key; });
  group.position = static_cast<int>(std::find(group.members.begin(), group.members.end(), my_rank) -
                                    group.members.begin());
  return group;
}

// Step 2: the leader's id for every member (and for the leader itself).
scclResult_t shareLeaderIds(scclComm* parent, int color, const Group& group, scclUniqueId* id) {
  const bool takes_part = color != SCCL_SPLIT_NOCOLOR;
  const bool leads = takes_part && group.position == 0;
  IdSlot mine{};
  std::string create_error;
  if (leads) {
    mine.is_leader = 1;
    mine.created = bootstrapCreateUniqueId(&mine.id);
    create_error = threadLastError();
  }
  // Every rank takes part, the ones without a color and a leader whose id failed included: the
  // others are already waiting in this exchange.
  std::vector<IdSlot> all(static_cast<size_t>(parent->nranks));
  SCCL_CHECK(
      commRecordFailure(parent, parent->transport->allGather(&mine, all.data(), sizeof(IdSlot))));
  if (!takes_part) return scclSuccess;
  const int leader = group.members.front();
  const IdSlot& slot = all[static_cast<size_t>(leader)];
  if (leads && mine.created != scclSuccess) {
    return fail(static_cast<scclResult_t>(mine.created), "scclCommSplit: %s", create_error.c_str());
  }
  if (slot.is_leader != 1 || slot.created != scclSuccess) {
    return fail(scclRemoteError,
                "scclCommSplit: rank %d of the communicator, new rank 0 of color %d, could not "
                "create the new communicator's unique id (see its log); the other colors' "
                "communicators are unaffected",
                leader, color);
  }
  *id = slot.id;
  return scclSuccess;
}

InheritedSettings inheritedFrom(const scclComm* parent) {
  InheritedSettings inherited;
  inherited.transport = parent->transport->name();
  inherited.timeout_ms = parent->timeout_ms;
  inherited.name = parent->name;
  return inherited;
}

}  // namespace

scclResult_t commSplit(scclComm* parent, int color, int key, scclComm** newcomm,
                       const scclConfig_t* config) {
  const InheritedSettings inherited = inheritedFrom(parent);
  CommInitRequest child;
  child.config = config;
  child.inherited = &inherited;
  // Step 1: every rank's arguments, judged alike everywhere.
  const scclResult_t checked = checkOwnArguments(parent, color, newcomm, child);
  const std::string own_error = checked == scclSuccess ? std::string() : threadLastError();
  const SplitEntry mine{color, key, static_cast<int32_t>(checked), 0};
  std::vector<SplitEntry> all;
  SCCL_CHECK(exchangeEntries(parent, mine, &all));
  SCCL_CHECK(judgeEntries(all, parent->rank, own_error));

  // Step 2: the groups and their ids.
  const Group group = groupOf(all, parent->rank);
  scclUniqueId id{};
  SCCL_CHECK(shareLeaderIds(parent, color, group, &id));
  if (color == SCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return scclSuccess;
  }

  // Step 3: the ordinary creation, within the group.
  child.nranks = static_cast<int>(group.members.size());
  child.rank = group.position;
  child.id = &id;
  scclComm* created = nullptr;
  SCCL_CHECK(commCreate(child, &created));
  SCCL_INFO(LogSubsys::Init, "comm %p rank %d/%d: split color %d key %d -> comm %p rank %d/%d",
            static_cast<void*>(parent), parent->rank, parent->nranks, color, key,
            static_cast<void*>(created), created->rank, created->nranks);
  *newcomm = created;
  return scclSuccess;
}

}  // namespace sccl
