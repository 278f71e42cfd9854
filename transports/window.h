// One-sided communication: a window is a region of memory that every rank of a communicator
// exposes, into which its peers write without the owner taking part (MPI passive-target RMA; the
// in-process transport implements the same semantics). EventGraD (src/event/) is its user.
//
// Contract (every transport):
//  - createWindow (Transport) is collective: every rank calls it in the same order with the same
//    size; each rank's window starts zeroed. Destruction is collective on transports whose engine
//    requires it (MPI_Win_free); the in-process windows may be destroyed in any order.
//  - Access epochs: put/putWord/flush to `target` only between lock(target) and unlock(target);
//    readWords/readBatch of the own window only between lock(rank) and unlock(rank). Locks are
//    shared (MPI_LOCK_SHARED): several origins may hold an epoch on one target at the same time, so
//    writers must write disjoint regions (the slot protocol gives each slot exactly one writer).
//  - put may complete in any order and byte by byte; flush(target) returns when every put and
//    putWord issued to target so far is complete in target's memory, so a later putWord is
//    ordered after them. unlock(target) flushes too.
//  - putWord and readWords are atomic per 64-bit word at 8-byte aligned offsets (MPI_Accumulate
//    with MPI_REPLACE / MPI_Get_accumulate with MPI_NO_OP). readWords has acquire semantics:
//    reads issued after it see at least what was complete in the window when the words were
//    written.
//  - readBatch copies several ranges; one that is being written concurrently by a put may return
//    any mix of old and new bytes (never a crash): consistency is the slot protocol's job
//    (transports/slot_window.h). Each readWords/readBatch call is complete when it returns (one
//    flush for the whole batch over MPI), and calls are ordered as issued.
//  - Offsets are bounds-checked (scclInvalidArgument); a put outside an epoch is scclInvalidUsage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class Window {
 public:
  virtual ~Window() = default;

  // Bytes of every rank's window.
  virtual size_t bytes() const = 0;

  virtual scclResult_t lock(int target) = 0;
  virtual scclResult_t unlock(int target) = 0;
  virtual scclResult_t flush(int target) = 0;

  // target's window [offset, offset + bytes) = data. data must stay unchanged until the next
  // flush(target) or unlock(target) (MPI reads it until the put completes).
  virtual scclResult_t put(int target, size_t offset, const void* data, size_t bytes) = 0;
  // Atomic store of one 64-bit word at an 8-byte aligned offset of target's window.
  virtual scclResult_t putWord(int target, size_t offset, uint64_t value) = 0;

  // Atomic loads (acquire) of `count` consecutive 64-bit words of the own window.
  virtual scclResult_t readWords(size_t offset, size_t count, uint64_t* values) = 0;

  struct Range {
    size_t offset;
    void* out;
    size_t bytes;
  };
  // Copies every range of the own window; ordered after the reads before it and before those
  // after it.
  virtual scclResult_t readBatch(const Range* ranges, size_t count) = 0;

  scclResult_t readWord(size_t offset, uint64_t* value) { return readWords(offset, 1, value); }
  scclResult_t read(size_t offset, void* out, size_t bytes) {
    Range range{offset, out, bytes};
    return readBatch(&range, 1);
  }
};

}  // namespace sccl
