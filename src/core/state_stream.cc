#include "core/state_stream.h"

#include <cmath>

#include "core/error.h"

namespace sccl {

scclResult_t StateReader::get(const char* field, void* value, size_t size) {
  if (size > size_ - offset_) {
    return fail(scclInvalidArgument,
                "checkpoint: the %s ends at byte %zu of %zu, before its field '%s' (%zu "
                "bytes): the blob is truncated or of another layout",
                section_, offset_, size_, field, size);
  }
  if (size > 0) std::memcpy(value, data_ + offset_, size);
  offset_ += size;
  return scclSuccess;
}

scclResult_t StateReader::flag(const char* field, bool* value) {
  uint8_t byte = 0;
  SCCL_CHECK(u8(field, &byte));
  SCCL_REQUIRE_ARG(byte <= 1, "checkpoint: the %s's field '%s' is %u, not 0 or 1",
                   section_, field, unsigned(byte));
  *value = byte == 1;
  return scclSuccess;
}

scclResult_t StateReader::text(const char* field, size_t max_size, std::string* value) {
  uint32_t size = 0;
  SCCL_CHECK(u32(field, &size));
  SCCL_REQUIRE_ARG(size <= max_size,
                   "checkpoint: the %s's field '%s' claims %u bytes (at most %zu)",
                   section_, field, size, max_size);
  std::string read(size, '\0');
  SCCL_CHECK(get(field, read.data(), size));
  *value = std::move(read);
  return scclSuccess;
}

scclResult_t StateReader::finite(const char* field, double* value) {
  double read = 0;
  SCCL_CHECK(f64(field, &read));
  SCCL_REQUIRE_ARG(std::isfinite(read), "checkpoint: the %s's field '%s' is %g",
                   section_, field, read);
  *value = read;
  return scclSuccess;
}

scclResult_t StateReader::finish() const {
  SCCL_REQUIRE_ARG(offset_ == size_,
                   "checkpoint: the %s has %zu bytes after its last field: the blob is "
                   "of another layout",
                   section_, size_ - offset_);
  return scclSuccess;
}

}  // namespace sccl
