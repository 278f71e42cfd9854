// The slot of the sync_free reduction and the checks every rank applies to every peer's slot
// header, shared by the host reduction (sync_free_reduction.cc) and the device one
// (cuda/device_sparse_allreduce.cc), so both accept and reject exactly the same slots.
// Slot: kSlotHeaderWords + capacity int64 words: k_r, non-finite count, config fingerprint, call
// number, then k_r ascending indices padded with -1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/call_header.h"

namespace sccl {

constexpr size_t kSlotHeaderWords = 4;  // k_r, non-finite count, fingerprint, call number

// Reads the nranks slot headers at words + r * stride_words and checks them: another sparsifier
// or call is scclInvalidUsage naming the rank; k_r above min(capacity, rank r's range) is
// scclRemoteError. Fills *headers and sp.rank_counts.
scclResult_t checkSlotHeaders(SparseCall& call, uint64_t capacity, const int64_t* words,
                              size_t stride_words, std::vector<CallHeader>* headers);

}  // namespace sccl
