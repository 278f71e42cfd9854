#include "transports/slot_window.h"

#include <sched.h>

#include "core/error.h"

namespace sccl {
namespace {

size_t roundUp8(size_t bytes) {
  return (bytes + 7) / 8 * 8;
}

// A retry loop checks the clock every this many attempts and yields the processor between them.
constexpr uint64_t kAttemptsBetweenClockChecks = 16;

}  // namespace

SlotRegion::SlotRegion(const std::vector<size_t>& payload_bytes) : payload_bytes_(payload_bytes) {
  bytes_ = 8 * payload_bytes_.size();
  for (size_t bytes : payload_bytes_) {
    slot_offsets_.push_back(bytes_);
    bytes_ += 2 * (8 + roundUp8(bytes));
  }
}

size_t SlotRegion::bufferOffset(size_t slot, uint64_t write) const {
  return slot_offsets_[slot] + (write % 2) * (8 + roundUp8(payload_bytes_[slot]));
}

scclResult_t writeSlots(Window& window, int target, size_t region_offset, const SlotRegion& region,
                        const SlotWrite* writes, size_t nwrites) {
  if (nwrites == 0) return scclSuccess;
  SCCL_REQUIRE_ARG(region_offset % 8 == 0, "slot region offset %zu is not 8-byte aligned",
                   region_offset);
  for (size_t i = 0; i < nwrites; ++i) {
    SCCL_REQUIRE_ARG(writes[i].slot < region.slots() && writes[i].version > 0,
                     "slot write %zu: slot %zu of %zu, version %llu", i, writes[i].slot,
                     region.slots(), static_cast<unsigned long long>(writes[i].version));
  }
  SCCL_CHECK(window.lock(target));
  scclResult_t result = scclSuccess;
  for (size_t i = 0; i < nwrites && result == scclSuccess; ++i) {
    const SlotWrite& w = writes[i];
    size_t buffer = region_offset + region.bufferOffset(w.slot, w.version);
    result = window.putWord(target, buffer, w.pass);
    if (result == scclSuccess) {
      result = window.put(target, buffer + 8, w.payload, region.payloadBytes(w.slot));
    }
  }
  // The buffers must be complete at the target before any version announces them.
  if (result == scclSuccess) result = window.flush(target);
  for (size_t i = 0; i < nwrites && result == scclSuccess; ++i) {
    result = window.putWord(target, region_offset + region.versionOffset(writes[i].slot),
                            writes[i].version);
  }
  scclResult_t unlocked = window.unlock(target);
  return result != scclSuccess ? result : unlocked;
}

scclResult_t readSlots(Window& window, size_t region_offset, const SlotRegion& region,
                       uint64_t max_pass, void* const* outs, SlotCopy* held, SlotReadStats* stats,
                       std::chrono::steady_clock::time_point deadline, SlotReadScratch* scratch) {
  SCCL_REQUIRE_ARG(region_offset % 8 == 0, "slot region offset %zu is not 8-byte aligned",
                   region_offset);
  const size_t n = region.slots();
  SlotReadScratch local;
  SlotReadScratch& w = scratch != nullptr ? *scratch : local;
  w.pending.resize(n);
  for (size_t s = 0; s < n; ++s) w.pending[s] = s;
  w.v1.resize(n);
  w.v2.resize(n);
  w.passes.resize(2 * n);
  w.chosen.resize(n);
  w.copied.resize(n);
  std::vector<size_t>& pending = w.pending;
  std::vector<uint64_t>&v1 = w.v1, &v2 = w.v2, &passes = w.passes, &chosen = w.chosen;
  std::vector<uint8_t>& copied = w.copied;
  std::vector<Window::Range>& ranges = w.ranges;
  for (uint64_t attempt = 1; !pending.empty(); ++attempt) {
    SCCL_CHECK(window.readWords(region_offset, n, v1.data()));
    ranges.clear();
    for (size_t s : pending) {
      if (v1[s] == 0) continue;
      for (uint64_t b = 0; b < 2; ++b) {
        ranges.push_back({region_offset + region.bufferOffset(s, b), &passes[2 * s + b], 8});
      }
    }
    SCCL_CHECK(window.readBatch(ranges.data(), ranges.size()));
    ranges.clear();
    for (size_t s : pending) {
      uint64_t write = v1[s];
      if (write > 0 && passes[2 * s + write % 2] > max_pass) --write;
      chosen[s] = write;
      copied[s] = write > 0 && write != held[s].version;
      if (copied[s]) {
        ranges.push_back(
            {region_offset + region.bufferOffset(s, write) + 8, outs[s], region.payloadBytes(s)});
      }
    }
    SCCL_CHECK(window.readBatch(ranges.data(), ranges.size()));
    SCCL_CHECK(window.readWords(region_offset, n, v2.data()));
    size_t still = 0;
    for (size_t s : pending) {
      if (v2[s] < v1[s]) {
        return fail(scclRemoteError, "slot %zu: version went back from %llu to %llu", s,
                    static_cast<unsigned long long>(v1[s]), static_cast<unsigned long long>(v2[s]));
      }
      if (v2[s] != v1[s]) {
        // A write completed during the read: a copy may be torn, so it is made again.
        if (copied[s]) held[s] = SlotCopy{};
        ++stats->retries;
        pending[still++] = s;
        continue;
      }
      uint64_t write = chosen[s];
      if (write == 0) continue;  // nothing yet, or only a write from a later pass
      uint64_t pass = passes[2 * s + write % 2];
      if (pass > max_pass) {
        return fail(scclRemoteError,
                    "slot %zu: writes %llu and %llu both carry passes above %llu; the writer "
                    "broke the one-write-per-pass protocol",
                    s, static_cast<unsigned long long>(write),
                    static_cast<unsigned long long>(write + 1),
                    static_cast<unsigned long long>(max_pass));
      }
      held[s] = SlotCopy{write, pass};
      if (copied[s]) ++stats->copies;
    }
    pending.resize(still);
    if (!pending.empty() && attempt % kAttemptsBetweenClockChecks == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        return fail(scclTimeout,
                    "%zu slot(s) without a consistent copy after %llu attempts (the writer "
                    "completes writes faster than they can be read)",
                    pending.size(), static_cast<unsigned long long>(attempt));
      }
      sched_yield();
    }
  }
  return scclSuccess;
}

}  // namespace sccl
