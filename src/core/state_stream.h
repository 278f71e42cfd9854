// The byte streams of a sparsifier checkpoint (sparsifier/sparsifier_state.h): components write
// their state as fixed-width little-endian fields in a fixed order and read it back in the same
// order. A reader never reads past its end: every read says whether the bytes were there, and the
// first missing field names itself in the error text, so a truncated or shortened section is an
// error at the field where it ends, never a read of memory outside the blob.
//
// Doubles travel as their 64-bit pattern, so a restored threshold is bitwise the saved one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class StateWriter {
 public:
  void u8(uint8_t value) { put(&value, 1); }
  void u32(uint32_t value) { put(&value, sizeof(value)); }
  void u64(uint64_t value) { put(&value, sizeof(value)); }
  void i64(int64_t value) { put(&value, sizeof(value)); }
  void f64(double value) { put(&value, sizeof(value)); }
  // A length (u32) and the bytes.
  void text(const std::string& value) {
    u32(static_cast<uint32_t>(value.size()));
    put(value.data(), value.size());
  }
  void bytes(const void* data, size_t size) { put(data, size); }

  const std::vector<unsigned char>& data() const { return data_; }
  size_t size() const { return data_.size(); }

 private:
  void put(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    data_.insert(data_.end(), p, p + size);
  }
  std::vector<unsigned char> data_;
};

class StateReader {
 public:
  // `section` names the stream in error texts ("shared state", "this rank's state").
  StateReader(const void* data, size_t size, const char* section)
      : data_(static_cast<const unsigned char*>(data)), size_(size), section_(section) {}

  // Each read fails with scclInvalidArgument naming `field` when the bytes are not there.
  scclResult_t u8(const char* field, uint8_t* value) { return get(field, value, 1); }
  scclResult_t u32(const char* field, uint32_t* value) { return get(field, value, 4); }
  scclResult_t u64(const char* field, uint64_t* value) { return get(field, value, 8); }
  scclResult_t i64(const char* field, int64_t* value) { return get(field, value, 8); }
  scclResult_t f64(const char* field, double* value) { return get(field, value, 8); }
  // A bool written as u8: any other value than 0 or 1 is refused.
  scclResult_t flag(const char* field, bool* value);
  // A text of at most max_size bytes.
  scclResult_t text(const char* field, size_t max_size, std::string* value);
  // A finite double (thresholds, densities); NaN and infinity are refused.
  scclResult_t finite(const char* field, double* value);
  scclResult_t bytes(const char* field, void* data, size_t size) { return get(field, data, size); }

  size_t remaining() const { return size_ - offset_; }
  // Fails naming the section when bytes are left over: a longer section than this version
  // writes is a blob of another layout.
  scclResult_t finish() const;
  const char* section() const { return section_; }

 private:
  scclResult_t get(const char* field, void* value, size_t size);

  const unsigned char* data_;
  size_t size_;
  size_t offset_ = 0;
  const char* section_;
};

}  // namespace sccl
