// A byte buffer aligned to a cache line (64 bytes), for vectors the kernels stream over.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace sccl {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { resize(bytes); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept { swap(other); }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  // Contents are not preserved; throws std::bad_alloc on failure (the API layer maps it).
  void resize(size_t bytes) {
    if (bytes <= capacity_) {
      size_ = bytes;
      return;
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    void* fresh = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (fresh == nullptr) throw std::bad_alloc();
    std::free(data_);
    data_ = fresh;
    capacity_ = rounded;
    size_ = bytes;
  }

  void swap(AlignedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace sccl
