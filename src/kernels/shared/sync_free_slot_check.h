// The checks every rank applies to the gathered slot headers of a sync_free call, compiled for
// the host and the device: the host reduction and the device path's read-back check call it on
// the host (sync_free_reduction.cc), the stream-ordered device path calls it in a kernel
// (cuda/kernels/sync_free_stream_ordered.cu), so every path accepts and rejects the same slots.
// Slot: kSlotHeaderWords + capacity int64 words: k_r, non-finite count, config fingerprint, call
// number, then k_r ascending indices padded with -1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/shared/host_device.h"

namespace sccl {

constexpr size_t kSlotHeaderWords = 4;  // k_r, non-finite count, fingerprint, call number

enum class SlotFault : uint32_t {
  None = 0,
  OtherCall = 1,           // another sparsifier, config or call number: scclInvalidUsage
  CountAboveCapacity = 2,  // k_r above min(capacity, rank r's range): scclRemoteError
};

struct SlotHeaderVerdict {
  SlotFault fault = SlotFault::None;
  int rank = -1;                  // the first rank at fault
  int first_nonfinite_rank = -1;  // the first rank reporting non-finite values (fault None)
};

// Checks the nranks headers at words + r * stride_words in rank order, against this rank's
// fingerprint and call number; ranges holds 2 * nranks words, begin and end of each rank's range
// at this call.
SCCL_HOST_DEVICE inline SlotHeaderVerdict checkSlotHeaderWords(
    const int64_t* words, size_t stride_words, int nranks, uint64_t capacity, uint64_t fingerprint,
    uint64_t sequence, const uint64_t* ranges) {
  SlotHeaderVerdict verdict;
  for (int r = 0; r < nranks; ++r) {
    const int64_t* header = words + size_t(r) * stride_words;
    if (uint64_t(header[2]) != fingerprint || uint64_t(header[3]) != sequence) {
      verdict.fault = SlotFault::OtherCall;
      verdict.rank = r;
      return verdict;
    }
    const uint64_t range = ranges[2 * r + 1] - ranges[2 * r];
    const uint64_t limit = capacity < range ? capacity : range;
    if (uint64_t(header[0]) > limit) {
      verdict.fault = SlotFault::CountAboveCapacity;
      verdict.rank = r;
      return verdict;
    }
    if (header[1] != 0 && verdict.first_nonfinite_rank < 0) verdict.first_nonfinite_rank = r;
  }
  return verdict;
}

}  // namespace sccl
