// Versioned slots in a one-sided window: how a writer puts a whole tensor into a peer's window
// while the peer may be reading it, and how the peer reads a copy that is never torn.
//
// A slot has exactly one writer (the caller's layout guarantees it) and is laid out as
//   [version u64][buffer 0: pass u64, payload][buffer 1: pass u64, payload]
// (payload rounded up to 8 bytes). `version` counts the writes completed into the slot; write v
// (v = 1, 2, ...) goes to buffer v % 2 (double buffering), tagged with the sender's pass.
//
// Writer, write v into target's slot (writeSlots, one epoch per target for all its slots):
//   lock(target); put pass and payload into buffer v % 2; flush(target);
//   putWord(version, v); unlock(target)
// so version = v becomes visible only after buffer v % 2 is complete in the target's memory.
//
// Reader (readSlot, in an epoch on the own window): v1 = version; choose the write w to read (v1,
// or v1 - 1 when write v1 comes from a pass later than max_pass); copy buffer w % 2; v2 = version.
// The copy is accepted only when v2 == v1, otherwise it is retried.
//
// Guarantee: an accepted copy is exactly the payload of write w, never a mix of two writes.
// Buffer w % 2 is next overwritten by write w + 2, which the writer starts only after version
// w + 1 is complete in the reader's memory (flush before every putWord, and a writer finishes
// write w + 1 before starting w + 2). If any byte the reader copied came from write w + 2, the
// reader's later load of version (ordered after the copy) sees at least w + 1 > v1 >= w and the
// copy is rejected. That argument covers w = v1 (the newest write). Reading w = v1 - 1 (max_pass
// below the newest write's pass) is safe only while the writer cannot start write v1 + 1 during
// the copy, which the version word cannot show; the caller must guarantee it. EventGraD's
// synchronous mode does, with a barrier per pass: a writer whose newest write is tagged k + 1
// cannot write again before pass k + 2, which it reaches only after the reader has left pass k.
// Readers never wait for writers: a retry is needed only when a whole write
// completed during the copy, so a reader makes progress unless its writer completes writes
// faster than it can copy one; past `deadline` it gives up with scclTimeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "transports/window.h"

namespace sccl {

// Bytes of one slot holding `payload_bytes`.
size_t slotBytes(size_t payload_bytes);

struct SlotWrite {
  size_t slot_offset = 0;  // 8-byte aligned offset of the slot in the target's window
  const void* payload = nullptr;
  size_t payload_bytes = 0;
  uint64_t version = 0;  // this write's number: previous writes into the slot + 1
  uint64_t pass = 0;     // tag stored with the payload (the sender's pass)
};

// Performs the writes into `target`'s window in one epoch (puts, one flush, versions, unlock).
// Bytes sent: per write payload + 16 (pass and version words).
scclResult_t writeSlots(Window& window, int target, const SlotWrite* writes, size_t nwrites);

struct SlotRead {
  bool empty = true;     // no write with pass <= max_pass has completed yet; `out` untouched
  bool copied = false;   // `out` was (re)written; false when known_version was still current
  uint64_t version = 0;  // the write read
  uint64_t pass = 0;     // its pass tag
  uint64_t retries = 0;  // copies discarded because a write completed meanwhile
};

// Reads the newest write with pass <= max_pass (UINT64_MAX: the newest; anything lower needs the
// synchronisation described above) of the slot at
// `slot_offset` of the own window into out (payload_bytes). If that write is `known_version`
// (whose payload `out` already holds) nothing is copied. Needs an open epoch on the own rank.
// scclRemoteError when the slot's contents break the protocol (two writes tagged with passes
// above max_pass, a version that went backwards).
scclResult_t readSlot(Window& window, size_t slot_offset, size_t payload_bytes, uint64_t max_pass,
                      uint64_t known_version, void* out, SlotRead* result,
                      std::chrono::steady_clock::time_point deadline);

}  // namespace sccl
