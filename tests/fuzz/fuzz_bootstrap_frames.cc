// libFuzzer harness: the bootstrap's decoders of untrusted bytes, without sockets.
//  - decodeUniqueId on the first 128 bytes: an id comes from the user or another process and
//    must be rejected (scclInvalidArgument, or scclInvalidUsage for another protocol version)
//    unless it is well formed; a decoded id must encode back to the same contents.
//  - the frame decoders on the rest: header, hello payload, reason text (printable only).
// The rank's side of a live connection to a hostile root is fuzz_bootstrap_rank.cc.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "transports/bootstrap/unique_id.h"
#include "transports/bootstrap/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  scclUniqueId id;
  std::memset(&id, 0, sizeof id);
  std::memcpy(&id, data, size < sizeof id ? size : sizeof id);
  sccl::UniqueIdContents contents;
  scclResult_t result = sccl::decodeUniqueId(id, &contents);
  if (result == scclSuccess) {
    scclUniqueId again;
    sccl::encodeUniqueId(contents, &again);
    sccl::UniqueIdContents back;
    if (sccl::decodeUniqueId(again, &back) != scclSuccess || back.port != contents.port ||
        back.token != contents.token || back.address != contents.address)
      std::abort();
  } else if (result != scclInvalidArgument && result != scclInvalidUsage) {
    std::abort();
  }
  if (size < sizeof id) return 0;
  data += sizeof id;
  size -= sizeof id;
  if (size >= sccl::wire::kHeaderBytes) {
    sccl::wire::FrameHeader header = sccl::wire::decodeHeader(data);
    uint8_t encoded[sccl::wire::kHeaderBytes];
    sccl::wire::encodeHeader(header, encoded);
    if (std::memcmp(encoded, data, sizeof encoded) != 0) std::abort();
    (void)sccl::wire::frameTypeName(header.type);
  }
  if (size >= sccl::wire::kHelloPayloadBytes) {
    sccl::wire::Hello hello = sccl::wire::decodeHelloPayload(data);
    (void)sccl::jobTokensEqual(hello.token, contents.token);
  }
  std::string text = sccl::wire::printableText(data, size);
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) std::abort();
  }
  return 0;
}
