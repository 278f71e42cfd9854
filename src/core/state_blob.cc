#include "core/state_blob.h"

#include <zlib.h>

#include <cstring>

#include "core/error.h"

namespace sccl {
namespace {

constexpr size_t kChecksumOffset = 12;
constexpr size_t kChecksumFrom = 16;

uint32_t checksumOf(const unsigned char* blob, size_t total) {
  const uLong start = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32_z(start, blob + kChecksumFrom, total - kChecksumFrom));
}

}  // namespace

void sealStateBlob(const StateBlobHeader& h, const StateWriter& shared, const StateWriter& own,
                   unsigned char* out) {
  StateWriter w;
  w.u64(h.magic);
  w.u32(kStateVersion);
  w.u32(0);  // the checksum, set last
  w.u64(h.total_bytes);
  w.u32(h.rank);
  w.u32(h.nranks);
  w.u64(h.count);
  w.u32(h.dtype);
  w.u32(h.second_dtype);
  w.u64(h.fingerprint);
  w.u64(h.shared_bytes);
  w.u64(h.own_bytes);
  w.u64(h.bulk_bytes);
  std::memcpy(out, w.data().data(), kStateHeaderBytes);
  if (h.shared_bytes > 0)
    std::memcpy(out + kStateHeaderBytes, shared.data().data(), h.shared_bytes);
  if (h.own_bytes > 0)
    std::memcpy(out + kStateHeaderBytes + h.shared_bytes, own.data().data(), h.own_bytes);
  const uint32_t checksum = checksumOf(out, h.total_bytes);
  std::memcpy(out + kChecksumOffset, &checksum, sizeof(checksum));
}

scclResult_t openStateBlob(const void* blob, size_t bytes, uint64_t magic, const char* what,
                           StateBlobHeader* out) {
  SCCL_REQUIRE_ARG(bytes >= kStateHeaderBytes, "%s: %zu bytes, shorter than its %zu-byte header",
                   what, bytes, kStateHeaderBytes);
  const auto* data = static_cast<const unsigned char*>(blob);
  StateReader r(data, kStateHeaderBytes, "header");
  StateBlobHeader h;
  uint32_t version = 0, checksum = 0;
  SCCL_CHECK(r.u64("magic", &h.magic));
  SCCL_REQUIRE_ARG(h.magic == magic, "%s: not a sparsecoll %s (magic %016llx)", what, what,
                   static_cast<unsigned long long>(h.magic));
  SCCL_CHECK(r.u32("version", &version));
  SCCL_REQUIRE_ARG(version == kStateVersion, "%s: format version %u, this library reads version %u",
                   what, version, kStateVersion);
  SCCL_CHECK(r.u32("checksum", &checksum));
  SCCL_CHECK(r.u64("total bytes", &h.total_bytes));
  SCCL_REQUIRE_ARG(h.total_bytes == bytes,
                   "%s: the header says %llu bytes, the buffer holds %zu (truncated or padded)",
                   what, static_cast<unsigned long long>(h.total_bytes), bytes);
  const uint32_t computed = checksumOf(data, bytes);
  SCCL_REQUIRE_ARG(computed == checksum, "%s: checksum %08x, the bytes give %08x (corrupted)", what,
                   checksum, computed);
  SCCL_CHECK(r.u32("rank", &h.rank));
  SCCL_CHECK(r.u32("rank count", &h.nranks));
  SCCL_CHECK(r.u64("count", &h.count));
  SCCL_CHECK(r.u32("dtype", &h.dtype));
  SCCL_CHECK(r.u32("second dtype", &h.second_dtype));
  SCCL_CHECK(r.u64("configuration fingerprint", &h.fingerprint));
  SCCL_CHECK(r.u64("shared section bytes", &h.shared_bytes));
  SCCL_CHECK(r.u64("own section bytes", &h.own_bytes));
  SCCL_CHECK(r.u64("bulk bytes", &h.bulk_bytes));
  const uint64_t body = bytes - kStateHeaderBytes;
  SCCL_REQUIRE_ARG(h.shared_bytes <= body && h.own_bytes <= body - h.shared_bytes &&
                       h.bulk_bytes == body - h.shared_bytes - h.own_bytes,
                   "%s: its sections (%llu + %llu + %llu bytes) do not fill its %llu bytes after "
                   "the header",
                   what, static_cast<unsigned long long>(h.shared_bytes),
                   static_cast<unsigned long long>(h.own_bytes),
                   static_cast<unsigned long long>(h.bulk_bytes),
                   static_cast<unsigned long long>(body));
  SCCL_CHECK(r.finish());
  *out = h;
  return scclSuccess;
}

}  // namespace sccl
