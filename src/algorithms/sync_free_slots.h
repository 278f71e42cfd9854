// The host side of the sync_free slot-header check: the diagnosis of a call on host buffers that
// the kernels refused (sync_free_reduction.cc), with the host's messages. The checks themselves
// are sync_free_slot_check.h, which the kernels run (syncFreeCheck), so both accept and reject
// the same slots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/call_header.h"
#include "kernels/shared/sync_free_slot_check.h"

namespace sccl {

// Every rank's range at this call, 2 nranks words (begin, end): what the slot checks bound each
// peer's count and indices by.
std::vector<uint64_t> rankRanges(const ReductionContext& ctx);

// Reads the nranks slot headers at words + r * stride_words and checks them: another sparsifier
// or call is scclInvalidUsage naming the rank; k_r above min(capacity, rank r's range) is
// scclRemoteError. Fills *headers and ctx.rank_counts.
scclResult_t checkSlotHeaders(SparseCall& call, uint64_t capacity, const int64_t* words,
                              size_t stride_words, std::vector<CallHeader>* headers);

}  // namespace sccl
