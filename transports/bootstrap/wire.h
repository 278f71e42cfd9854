// The bootstrap's frames on the TCP connection between a rank and the root. Every frame is a
// 24-byte header followed by `payload_bytes` bytes, all integers big-endian:
//
//   header:  u32 magic "SCBF" | u16 protocol version | u16 frame type | u64 sequence
//            | u64 payload bytes
//
//   type         dir          sequence  payload
//   Hello        rank->root   0         job token[16] | u32 nranks | u32 rank
//   Joined       root->rank   0         u32 nranks | u32 ranks joined so far, this one included
//   Accepted     root->rank   0         u32 nranks | u32 rank          (everybody has joined)
//   Rejected     root->rank   0         reason text (1..kMaxReasonBytes bytes, no NUL)
//   RoundData    rank->root   round     this rank's contribution (0..kMaxRoundPayloadBytes)
//   RoundResult  root->rank   round     the contributions of ranks 0..nranks-1, concatenated
//   RoundError   root->rank   round     u32 scclResult_t | reason text
//
// The header and the Rejected frame are frozen across protocol versions, so that a root can
// tell a rank of another version why it is turned away. Rounds are numbered from 0 per
// connection; a barrier is a round of 0 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "transports/bootstrap/unique_id.h"

namespace sccl::wire {

constexpr uint32_t kFrameMagic = 0x53434246u;  // "SCBF"
constexpr size_t kHeaderBytes = 24;
constexpr size_t kHelloPayloadBytes = 24;
constexpr size_t kRankPairPayloadBytes = 8;  // Joined, Accepted
constexpr size_t kMaxReasonBytes = 1024;

// Sanity limits, checked by both sides before anything is allocated. The bootstrap carries
// set-up data (addresses, ids), far below these.
constexpr uint32_t kMaxRanks = 65536;
constexpr uint64_t kMaxRoundPayloadBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxRoundResultBytes = uint64_t{256} << 20;

enum class FrameType : uint16_t {
  Hello = 1,
  Joined = 2,
  Accepted = 3,
  Rejected = 4,
  RoundData = 5,
  RoundResult = 6,
  RoundError = 7,
};

struct FrameHeader {
  uint32_t magic = kFrameMagic;
  uint16_t version = kBootstrapProtocolVersion;
  uint16_t type = 0;
  uint64_t sequence = 0;
  uint64_t payload_bytes = 0;
};

struct Hello {
  JobToken token{};
  uint32_t nranks = 0;
  uint32_t rank = 0;
};

using Bytes = std::vector<uint8_t>;

void encodeHeader(const FrameHeader& header, uint8_t* out);
FrameHeader decodeHeader(const uint8_t* in);

// A whole frame: header and payload. The version is a parameter only so that tests can speak
// another protocol version.
Bytes encodeFrame(FrameType type, uint64_t sequence, const void* payload, size_t payload_bytes,
                  uint16_t version = kBootstrapProtocolVersion);
Bytes encodeHelloFrame(const Hello& hello, uint16_t version = kBootstrapProtocolVersion);
Bytes encodeRankPairFrame(FrameType type, uint32_t nranks, uint32_t value);
Bytes encodeRejectedFrame(const std::string& reason);
Bytes encodeRoundErrorFrame(uint64_t round, scclResult_t code, const std::string& reason);

Hello decodeHelloPayload(const uint8_t* payload);

// The reason text of a Rejected or RoundError payload, with bytes that are not printable ASCII
// replaced by '?' (it ends up in logs and error messages).
std::string printableText(const uint8_t* text, size_t bytes);

const char* frameTypeName(uint16_t type);

}  // namespace sccl::wire
