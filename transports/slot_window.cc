#include "transports/slot_window.h"

#include <sched.h>

#include "core/error.h"

namespace sccl {
namespace {

size_t roundUp8(size_t bytes) {
  return (bytes + 7) / 8 * 8;
}

// Offset of buffer (write % 2) in a slot: after the version word, each buffer a pass word and
// the padded payload.
size_t bufferOffset(size_t slot_offset, size_t payload_bytes, uint64_t write) {
  return slot_offset + 8 + (write % 2) * (8 + roundUp8(payload_bytes));
}

// A retry loop checks the clock every this many attempts and yields the processor between them.
constexpr uint64_t kAttemptsBetweenClockChecks = 64;

}  // namespace

size_t slotBytes(size_t payload_bytes) {
  return 8 + 2 * (8 + roundUp8(payload_bytes));
}

scclResult_t writeSlots(Window& window, int target, const SlotWrite* writes, size_t nwrites) {
  if (nwrites == 0) return scclSuccess;
  for (size_t i = 0; i < nwrites; ++i) {
    SCCL_REQUIRE_ARG(writes[i].slot_offset % 8 == 0 && writes[i].version > 0,
                     "slot write %zu: offset %zu not aligned or version 0", i,
                     writes[i].slot_offset);
  }
  SCCL_CHECK(window.lock(target));
  scclResult_t result = scclSuccess;
  for (size_t i = 0; i < nwrites && result == scclSuccess; ++i) {
    const SlotWrite& w = writes[i];
    size_t buffer = bufferOffset(w.slot_offset, w.payload_bytes, w.version);
    result = window.putWord(target, buffer, w.pass);
    if (result == scclSuccess) result = window.put(target, buffer + 8, w.payload, w.payload_bytes);
  }
  // The buffers must be complete at the target before any version announces them.
  if (result == scclSuccess) result = window.flush(target);
  for (size_t i = 0; i < nwrites && result == scclSuccess; ++i) {
    result = window.putWord(target, writes[i].slot_offset, writes[i].version);
  }
  scclResult_t unlocked = window.unlock(target);
  return result != scclSuccess ? result : unlocked;
}

scclResult_t readSlot(Window& window, size_t slot_offset, size_t payload_bytes, uint64_t max_pass,
                      uint64_t known_version, void* out, SlotRead* result,
                      std::chrono::steady_clock::time_point deadline) {
  SCCL_REQUIRE_ARG(slot_offset % 8 == 0, "slot read: offset %zu not 8-byte aligned", slot_offset);
  SlotRead read;
  for (uint64_t attempt = 1;; ++attempt) {
    uint64_t v1 = 0;
    SCCL_CHECK(window.readWord(slot_offset, &v1));
    if (v1 == 0) break;  // empty
    uint64_t chosen = v1;
    uint64_t pass = 0;
    SCCL_CHECK(window.readWord(bufferOffset(slot_offset, payload_bytes, chosen), &pass));
    if (pass > max_pass) {
      chosen = v1 - 1;
      if (chosen > 0) {
        SCCL_CHECK(window.readWord(bufferOffset(slot_offset, payload_bytes, chosen), &pass));
      }
    }
    bool copied = false;
    if (chosen > 0 && chosen != known_version) {
      SCCL_CHECK(
          window.read(bufferOffset(slot_offset, payload_bytes, chosen) + 8, out, payload_bytes));
      copied = true;
    }
    uint64_t v2 = 0;
    SCCL_CHECK(window.readWord(slot_offset, &v2));
    if (v2 == v1) {
      if (chosen == 0) break;  // the only write is from a later pass: nothing to use yet
      if (pass > max_pass) {
        return fail(scclRemoteError,
                    "slot at offset %zu: writes %llu and %llu both carry passes above %llu; the "
                    "writer broke the one-write-per-pass protocol",
                    slot_offset, static_cast<unsigned long long>(v1 - 1),
                    static_cast<unsigned long long>(v1), static_cast<unsigned long long>(max_pass));
      }
      read.empty = false;
      read.copied = copied;
      read.version = chosen;
      read.pass = pass;
      *result = read;
      return scclSuccess;
    }
    if (v2 < v1) {
      return fail(scclRemoteError, "slot at offset %zu: version went back from %llu to %llu",
                  slot_offset, static_cast<unsigned long long>(v1),
                  static_cast<unsigned long long>(v2));
    }
    // A write completed during the copy: `out` may be torn, so the next attempt copies again.
    ++read.retries;
    known_version = 0;
    if (attempt % kAttemptsBetweenClockChecks == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        return fail(scclTimeout,
                    "slot at offset %zu: no consistent copy after %llu attempts (the writer "
                    "completes writes faster than they can be read)",
                    slot_offset, static_cast<unsigned long long>(attempt));
      }
      sched_yield();
    }
  }
  read.empty = true;
  *result = read;
  return scclSuccess;
}

}  // namespace sccl
