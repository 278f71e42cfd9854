// The framing of a checkpoint blob (sparsifier/sparsifier_state.h, event/event_state.h): a fixed
// 80-byte header, a section every rank holds alike, a section of this rank's own state, and bulk
// data (residuals, parameter copies). Little-endian (the byte order of every host this library
// builds for), version 1:
//   0 magic (u64, names the kind of blob)   8 version (u32)   12 CRC-32 of bytes 16.. (u32)
//   16 total bytes (u64)   24 rank, rank count (u32 each)   32 count (u64)
//   40 dtype, second dtype (u32 each)   48 configuration fingerprint (u64)
//   56, 64, 72 the sizes of the shared section, the own section and the bulk data (u64 each)
// The owner of each kind checks the fields that say which object wrote the blob.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/state_stream.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

inline constexpr uint32_t kStateVersion = 1;
inline constexpr size_t kStateHeaderBytes = 80;

struct StateBlobHeader {
  uint64_t magic = 0;
  uint64_t total_bytes = 0;
  uint32_t rank = 0, nranks = 0;
  uint64_t count = 0;
  uint32_t dtype = 0, second_dtype = 0;
  uint64_t fingerprint = 0;
  uint64_t shared_bytes = 0, own_bytes = 0, bulk_bytes = 0;

  // Where the bulk data starts; total_bytes follows from the sizes (setSizes).
  size_t bulkOffset() const { return kStateHeaderBytes + shared_bytes + own_bytes; }
  void setSizes(size_t shared, size_t own, size_t bulk) {
    shared_bytes = shared;
    own_bytes = own;
    bulk_bytes = bulk;
    total_bytes = kStateHeaderBytes + shared + own + bulk;
  }
};

// Writes the header and both sections into out[0, h.bulkOffset()) and the CRC over the whole
// blob; the caller has written the bulk data at out + h.bulkOffset() already.
void sealStateBlob(const StateBlobHeader& h, const StateWriter& shared, const StateWriter& own,
                   unsigned char* out);

// Checks a blob of `bytes` bytes as untrusted input: long enough for its header, `magic`, this
// version, the size it claims, the CRC, and sections that fill it exactly. Fills *out on success;
// `what` names the blob in the error texts ("sparsifier checkpoint").
scclResult_t openStateBlob(const void* blob, size_t bytes, uint64_t magic, const char* what,
                           StateBlobHeader* out);

}  // namespace sccl
