// Encoding and decoding of the bootstrap's frames (layouts in wire.h).
#include "transports/bootstrap/wire.h"

#include <algorithm>
#include <cstring>

#include "transports/bootstrap/byte_order.h"

namespace sccl::wire {

using namespace byte_order;

void encodeHeader(const FrameHeader& header, uint8_t* out) {
  putU32(out, header.magic);
  putU16(out + 4, header.version);
  putU16(out + 6, header.type);
  putU64(out + 8, header.sequence);
  putU64(out + 16, header.payload_bytes);
}

FrameHeader decodeHeader(const uint8_t* in) {
  FrameHeader header;
  header.magic = getU32(in);
  header.version = getU16(in + 4);
  header.type = getU16(in + 6);
  header.sequence = getU64(in + 8);
  header.payload_bytes = getU64(in + 16);
  return header;
}

Bytes encodeFrame(FrameType type, uint64_t sequence, const void* payload, size_t payload_bytes,
                  uint16_t version) {
  Bytes frame(kHeaderBytes + payload_bytes);
  FrameHeader header;
  header.version = version;
  header.type = static_cast<uint16_t>(type);
  header.sequence = sequence;
  header.payload_bytes = payload_bytes;
  encodeHeader(header, frame.data());
  if (payload_bytes > 0) std::memcpy(frame.data() + kHeaderBytes, payload, payload_bytes);
  return frame;
}

Bytes encodeHelloFrame(const Hello& hello, uint16_t version) {
  uint8_t payload[kHelloPayloadBytes];
  std::memcpy(payload, hello.token.data(), hello.token.size());
  putU32(payload + 16, hello.nranks);
  putU32(payload + 20, hello.rank);
  return encodeFrame(FrameType::Hello, 0, payload, sizeof(payload), version);
}

Bytes encodeRankPairFrame(FrameType type, uint32_t nranks, uint32_t value) {
  uint8_t payload[kRankPairPayloadBytes];
  putU32(payload, nranks);
  putU32(payload + 4, value);
  return encodeFrame(type, 0, payload, sizeof(payload));
}

Bytes encodeRejectedFrame(const std::string& reason) {
  size_t bytes = std::clamp<size_t>(reason.size(), 1, kMaxReasonBytes);
  std::string text = reason.empty() ? std::string("?") : reason.substr(0, bytes);
  return encodeFrame(FrameType::Rejected, 0, text.data(), text.size());
}

Bytes encodeRoundErrorFrame(uint64_t round, scclResult_t code, const std::string& reason) {
  std::string text = reason.substr(0, kMaxReasonBytes);
  Bytes payload(4 + text.size());
  putU32(payload.data(), static_cast<uint32_t>(code));
  std::memcpy(payload.data() + 4, text.data(), text.size());
  return encodeFrame(FrameType::RoundError, round, payload.data(), payload.size());
}

Hello decodeHelloPayload(const uint8_t* payload) {
  Hello hello;
  std::memcpy(hello.token.data(), payload, hello.token.size());
  hello.nranks = getU32(payload + 16);
  hello.rank = getU32(payload + 20);
  return hello;
}

std::string printableText(const uint8_t* text, size_t bytes) {
  std::string printable(reinterpret_cast<const char*>(text), bytes);
  for (char& c : printable) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return printable;
}

const char* frameTypeName(uint16_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::Hello: return "Hello";
    case FrameType::Joined: return "Joined";
    case FrameType::Accepted: return "Accepted";
    case FrameType::Rejected: return "Rejected";
    case FrameType::RoundData: return "RoundData";
    case FrameType::RoundResult: return "RoundResult";
    case FrameType::RoundError: return "RoundError";
  }
  return "unknown";
}

}  // namespace sccl::wire
