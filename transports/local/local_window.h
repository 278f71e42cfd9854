// One-sided windows of the in-process transport (contract: transports/window.h). Every rank's
// window is a block of 64-bit words in this process; a put stores into the target's block with
// relaxed atomic stores, putWord is a release store, readWords acquire loads and readBatch copies
// by relaxed atomic loads followed by an acquire fence. Every access is therefore a C++ atomic: a
// read that overlaps a put sees some mix of old and new words, without undefined behaviour, and
// the slot protocol (transports/slot_window.h) detects and discards such reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transports/window.h"
#include "transports/window_epochs.h"

namespace sccl {

// One rank's window memory: zeroed words, shared by every rank's LocalWindow object so that it
// lives until the last of them is gone (destruction need not be collective).
struct LocalWindowMemory {
  explicit LocalWindowMemory(size_t size) : bytes(size), words((size + 7) / 8, 0) {}
  size_t bytes;
  std::vector<uint64_t> words;
};

class LocalWindow final : public Window {
 public:
  LocalWindow(int rank, std::vector<std::shared_ptr<LocalWindowMemory>> memories);

  size_t bytes() const override { return memories_[static_cast<size_t>(rank_)]->bytes; }
  scclResult_t lock(int target) override;
  scclResult_t unlock(int target) override;
  scclResult_t flush(int target) override;
  scclResult_t put(int target, size_t offset, const void* data, size_t bytes) override;
  scclResult_t putWord(int target, size_t offset, uint64_t value) override;
  scclResult_t readWords(size_t offset, size_t count, uint64_t* values) override;
  scclResult_t readBatch(const Range* ranges, size_t count) override;

 private:
  const int rank_;
  std::vector<std::shared_ptr<LocalWindowMemory>> memories_;
  WindowEpochs epochs_;
};

}  // namespace sccl
