// Versioned slots in a one-sided window: how a writer puts whole tensors into a peer's window
// while the peer may be reading them, and how the peer reads copies that are never torn.
//
// A region holds the slots of one writer (one per tensor) and is laid out as
//   [version u64 of slot 0 .. n-1][slot 0: buffer 0, buffer 1][slot 1: ...] ...
//   buffer = [pass u64][payload, rounded up to 8 bytes]
// Slot s's `version` counts the writes completed into it; write v (v = 1, 2, ...) goes to buffer
// v % 2 (double buffering), tagged with the sender's pass. The version words are contiguous so a
// reader fetches all of them with one atomic read.
//
// Writer, writes v_s into some slots s of target's region (writeSlots, one epoch):
//   lock(target); for each s: put pass and payload into buffer v_s % 2; flush(target);
//   for each s: putWord(version_s, v_s); unlock(target)
// so version v becomes visible only after buffer v % 2 is complete in the target's memory.
//
// Reader (readSlots, in an epoch on the own window), for all slots of a region at once:
//   V1 = all versions; read both pass words of every slot; per slot choose the write w to use
//   (V1, or V1 - 1 when write V1 carries a pass above max_pass) and copy buffer w % 2 unless it
//   is already held; V2 = all versions. A slot is accepted when V2 == V1, otherwise it is read
//   again (only the slots that changed). Four round trips per region and attempt, whatever the
//   number of slots.
//
// Guarantee: an accepted copy is exactly the payload of write w, never a mix of two writes.
// Buffer w % 2 is next overwritten by write w + 2, which the writer starts only after version
// w + 1 is complete in the reader's memory (flush before every version word, and a writer finishes
// write w + 1 before starting w + 2). If any byte the reader copied came from write w + 2, the
// reader's later load of the version (ordered after the copy) sees at least w + 1 > V1 >= w and
// the copy is rejected. That argument covers w = V1 (the newest write). Reading w = V1 - 1
// (max_pass below the newest write's pass) is safe only while the writer cannot start write
// V1 + 1 during the copy, which the version word cannot show; the caller must guarantee it.
// EventGraD's synchronous mode does, with a barrier per pass: a writer whose newest write is
// tagged k + 1 cannot write again before pass k + 2, which it reaches only after the reader has
// left pass k. Readers never wait for writers: a retry is needed only when a whole write
// completed during the copy, so a reader makes progress unless its writer completes writes
// faster than it can copy one; past `deadline` it gives up with scclTimeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transports/window.h"

namespace sccl {

class SlotRegion {
 public:
  SlotRegion() = default;
  explicit SlotRegion(const std::vector<size_t>& payload_bytes);

  size_t slots() const { return payload_bytes_.size(); }
  size_t bytes() const { return bytes_; }
  size_t payloadBytes(size_t slot) const { return payload_bytes_[slot]; }
  // Offsets relative to the region's start.
  size_t versionOffset(size_t slot) const { return slot * 8; }
  size_t bufferOffset(size_t slot, uint64_t write) const;  // its pass word; the payload follows

 private:
  std::vector<size_t> payload_bytes_;
  std::vector<size_t> slot_offsets_;
  size_t bytes_ = 0;
};

struct SlotWrite {
  size_t slot = 0;
  const void* payload = nullptr;  // region.payloadBytes(slot) bytes
  uint64_t version = 0;           // this write's number: previous writes into the slot + 1
  uint64_t pass = 0;              // tag stored with the payload (the sender's pass)
};

// Performs the writes into the region at `region_offset` of target's window in one epoch (puts,
// one flush, versions, unlock). Bytes sent: per write payload + 16 (pass and version words).
scclResult_t writeSlots(Window& window, int target, size_t region_offset, const SlotRegion& region,
                        const SlotWrite* writes, size_t nwrites);

// The copy a reader holds of a slot: which write (0: none) and its pass tag.
struct SlotCopy {
  uint64_t version = 0;
  uint64_t pass = 0;
};

struct SlotReadStats {
  uint64_t copies = 0;   // payloads copied and accepted
  uint64_t retries = 0;  // slots read again because a write completed during the read
};

// Working memory of readSlots, kept by a caller that reads every pass so that the steady state
// allocates nothing.
struct SlotReadScratch {
  std::vector<size_t> pending;
  std::vector<uint64_t> v1, v2, passes, chosen;
  std::vector<uint8_t> copied;
  std::vector<Window::Range> ranges;
};

// Brings the copy of every slot of the region at `region_offset` of the own window (outs[s],
// payloadBytes(s) bytes, described by held[s]) to the newest write with pass <= max_pass
// (UINT64_MAX: the newest; anything lower needs the synchronisation described above). A slot
// whose newest usable write is already held is not copied again; one without any keeps held[s]
// = {0, 0}. Needs an open epoch on the own rank. scclRemoteError when a slot's contents break the
// protocol (two writes tagged above max_pass, a version that went backwards).
scclResult_t readSlots(Window& window, size_t region_offset, const SlotRegion& region,
                       uint64_t max_pass, void* const* outs, SlotCopy* held, SlotReadStats* stats,
                       std::chrono::steady_clock::time_point deadline,
                       SlotReadScratch* scratch = nullptr);

}  // namespace sccl
