// The call record: what each rank says about the collective it is entering, all-gathered before
// any data moves so that ranks which called different things all return an error instead of
// exchanging mismatched buffers (comm/call_agreement.h fills and checks it; docs/reliability.md,
// "Call agreement").
//
// A transport only carries records: Transport::agree all-gathers them (one fixed-size exchange
// that every public collective starts with, so it is safe whatever the peers entered), and a
// transport that can fold the record into its next collective's first synchronisation
// (Transport::carryAgreement, the in-process transport) saves that round trip.
#pragma once

#include <cstdint>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// 64 bytes, the same layout on every rank of a job (every field fixed-width, no padding).
struct CallRecord {
  static constexpr uint32_t kMagic = 0x53434341u;  // "SCCA"
  uint32_t magic = kMagic;
  uint32_t operation = 0;    // CallOperation (comm/call_agreement.h)
  uint64_t sequence = 0;     // the communicator's agreed call number
  uint64_t count = 0;        // elements (0 where the operation has none)
  int16_t dtype = -1;        // scclDataType_t, -1: none
  int16_t redop = -1;        // scclRedOp_t, -1: none
  int32_t root = -1;         // broadcast root, -1: none
  uint32_t flags = 0;        // CallRecord::kInPlace... (informational: not compared)
  int32_t rank = -1;         // the sender (checked against its position)
  uint64_t object = 0;       // the sparsifier's or event communicator's identity, 0: none
  uint64_t config = 0;       // fingerprint of its configuration, 0: none
  uint64_t object_call = 0;  // the sparsifier's own call number

  static constexpr uint32_t kInPlace = 1;
  static constexpr uint32_t kDevice = 2;
};
static_assert(sizeof(CallRecord) == 64, "CallRecord is exchanged as 64 raw bytes");

// Checks every rank's record (all[0..nranks)) once they are gathered; the same verdict on every
// rank (it compares each rank's record with rank 0's). A mismatch returns scclInvalidUsage with
// the message set (core/error.h) and records the refusal in *context's outcome.
struct CallAgreement {
  const CallRecord* mine = nullptr;
  scclResult_t (*check)(const CallRecord* all, int nranks, void* context) = nullptr;
  void* context = nullptr;
};

}  // namespace sccl
