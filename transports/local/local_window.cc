#include "transports/local/local_window.h"

#include <atomic>
#include <cstring>

#include "core/error.h"

namespace sccl {
namespace {

// Byte `index` of a word array, as an atomic byte (for the unaligned ends of a put or read).
std::atomic_ref<unsigned char> byteRef(uint64_t* words, size_t index) {
  return std::atomic_ref<unsigned char>(reinterpret_cast<unsigned char*>(words)[index]);
}

}  // namespace

LocalWindow::LocalWindow(int rank, std::vector<std::shared_ptr<LocalWindowMemory>> memories)
    : rank_(rank),
      memories_(std::move(memories)),
      epochs_(memories_.size(), memories_[static_cast<size_t>(rank)]->bytes) {}

scclResult_t LocalWindow::lock(int target) {
  SCCL_CHECK(epochs_.requireClosed(target));
  epochs_.setOpen(target, true);
  return scclSuccess;
}

scclResult_t LocalWindow::unlock(int target) {
  SCCL_CHECK(epochs_.requireEpoch("unlock", target));
  SCCL_CHECK(flush(target));
  epochs_.setOpen(target, false);
  return scclSuccess;
}

scclResult_t LocalWindow::flush(int target) {
  SCCL_CHECK(epochs_.requireEpoch("flush", target));
  // Stores of this thread are complete when put returns; the fence orders them before the
  // stores that follow (putWord is a release store as well).
  std::atomic_thread_fence(std::memory_order_release);
  return scclSuccess;
}

scclResult_t LocalWindow::put(int target, size_t offset, const void* data, size_t bytes) {
  SCCL_CHECK(epochs_.requireEpoch("put", target));
  SCCL_CHECK(epochs_.requireRange("put", offset, bytes));
  SCCL_REQUIRE_ARG(data != nullptr || bytes == 0, "window put: data is NULL");
  uint64_t* words = memories_[static_cast<size_t>(target)]->words.data();
  const auto* source = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i < bytes && (offset + i) % 8 != 0; ++i) {
    byteRef(words, offset + i).store(source[i], std::memory_order_relaxed);
  }
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, source + i, 8);
    std::atomic_ref<uint64_t>(words[(offset + i) / 8]).store(word, std::memory_order_relaxed);
  }
  for (; i < bytes; ++i) {
    byteRef(words, offset + i).store(source[i], std::memory_order_relaxed);
  }
  return scclSuccess;
}

scclResult_t LocalWindow::putWord(int target, size_t offset, uint64_t value) {
  SCCL_CHECK(epochs_.requireEpoch("putWord", target));
  SCCL_CHECK(epochs_.requireRange("putWord", offset, 8));
  SCCL_REQUIRE_ARG(offset % 8 == 0, "window putWord at offset %zu: not 8-byte aligned", offset);
  uint64_t* words = memories_[static_cast<size_t>(target)]->words.data();
  std::atomic_ref<uint64_t>(words[offset / 8]).store(value, std::memory_order_release);
  return scclSuccess;
}

scclResult_t LocalWindow::readWords(size_t offset, size_t count, uint64_t* values) {
  SCCL_CHECK(epochs_.requireEpoch("readWords", rank_));
  SCCL_REQUIRE_ARG(count <= bytes() / 8, "window readWords: %zu words", count);
  SCCL_CHECK(epochs_.requireRange("readWords", offset, count * 8));
  SCCL_REQUIRE_ARG(offset % 8 == 0, "window readWords at offset %zu: not 8-byte aligned", offset);
  SCCL_REQUIRE_ARG(values != nullptr || count == 0, "window readWords: values is NULL");
  uint64_t* words = memories_[static_cast<size_t>(rank_)]->words.data();
  for (size_t i = 0; i < count; ++i) {
    values[i] = std::atomic_ref<uint64_t>(words[offset / 8 + i]).load(std::memory_order_acquire);
  }
  return scclSuccess;
}

scclResult_t LocalWindow::readBatch(const Range* ranges, size_t count) {
  SCCL_CHECK(epochs_.requireEpoch("read", rank_));
  for (size_t r = 0; r < count; ++r) {
    SCCL_CHECK(epochs_.requireRange("read", ranges[r].offset, ranges[r].bytes));
    SCCL_REQUIRE_ARG(ranges[r].out != nullptr || ranges[r].bytes == 0, "window read: out is NULL");
  }
  uint64_t* words = memories_[static_cast<size_t>(rank_)]->words.data();
  for (size_t r = 0; r < count; ++r) {
    const size_t offset = ranges[r].offset, bytes = ranges[r].bytes;
    auto* target = static_cast<unsigned char*>(ranges[r].out);
    size_t i = 0;
    for (; i < bytes && (offset + i) % 8 != 0; ++i) {
      target[i] = byteRef(words, offset + i).load(std::memory_order_relaxed);
    }
    for (; i + 8 <= bytes; i += 8) {
      uint64_t word =
          std::atomic_ref<uint64_t>(words[(offset + i) / 8]).load(std::memory_order_relaxed);
      std::memcpy(target + i, &word, 8);
    }
    for (; i < bytes; ++i) {
      target[i] = byteRef(words, offset + i).load(std::memory_order_relaxed);
    }
  }
  // Orders the loads above before any later readWords (the slot reader's re-check).
  std::atomic_thread_fence(std::memory_order_acquire);
  return scclSuccess;
}

}  // namespace sccl
