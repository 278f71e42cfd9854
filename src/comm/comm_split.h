// scclCommSplit below the API: the ranks of a communicator that pass the same color become a new
// communicator of their own, ranked by (key, rank in the parent), as with ncclCommSplit.
#pragma once

#include "comm/comm.h"

namespace sccl {

// Collective over `parent` (healthy and live: the API checked it). This rank's color, newcomm and
// config are checked here, not by the caller, because a rank whose arguments are wrong must still
// take part, so that every rank returns an error instead of waiting for it. On success *newcomm
// is the child, or null for SCCL_SPLIT_NOCOLOR; on failure it is untouched and the parent stays
// usable unless its transport failed.
scclResult_t commSplit(scclComm* parent, int color, int key, scclComm** newcomm,
                       const scclConfig_t* config);

}  // namespace sccl
