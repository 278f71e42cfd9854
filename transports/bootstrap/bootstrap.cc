// The bootstrap client (one per rank) and bootstrapCreateUniqueId. A rank connects to the root
// named by the unique id, says hello, waits for the others, and then runs all-gather rounds over
// its one connection. Every wait has the deadline given to connect(); after a failure the
// client is broken and only repeats the error.
#include "transports/bootstrap/bootstrap.h"

#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "core/settings.h"
#include "transports/bootstrap/bootstrap_root.h"
#include "transports/bootstrap/byte_order.h"
#include "transports/bootstrap/socket.h"
#include "transports/bootstrap/unique_id.h"
#include "transports/bootstrap/wire.h"

namespace sccl {
namespace {

using wire::Bytes;
using wire::FrameHeader;
using wire::FrameType;
using ull = unsigned long long;

// Turns a failed send or receive into the error of the bootstrap call, said once.
scclResult_t ioFailure(const IoStatus& status, const Deadline& deadline, const std::string& root,
                       const std::string& context) {
  switch (status.kind) {
    case IoStatus::Kind::Timeout:
      return fail(scclTimeout, "bootstrap: timed out after %lld ms %s",
                  static_cast<long long>(deadline.timeoutMs()), context.c_str());
    case IoStatus::Kind::PeerClosed:
      return fail(scclRemoteError,
                  "bootstrap: the root at %s closed the connection %s (the process that made the "
                  "unique id exited, the rendezvous timed out there, or another rank failed)",
                  root.c_str(), context.c_str());
    case IoStatus::Kind::SystemError:
      return fail(scclSystemError, "bootstrap: socket error %s: %s", context.c_str(),
                  strerror(status.error_number));
    case IoStatus::Kind::Ok: break;
  }
  return fail(scclInternalError, "bootstrap: ioFailure called without a failure");
}

scclResult_t malformedReply(const std::string& root, const std::string& what) {
  return fail(scclRemoteError, "bootstrap: malformed reply from the root at %s: %s", root.c_str(),
              what.c_str());
}

// Receives a header and a payload of at most max_payload bytes (checked before reading it).
scclResult_t recvSmallFrame(const Socket& socket, const Deadline& deadline, size_t max_payload,
                            const std::string& root, const std::string& context,
                            FrameHeader* header, Bytes* payload) {
  uint8_t header_bytes[wire::kHeaderBytes];
  IoStatus status = recvExact(socket, header_bytes, sizeof(header_bytes), deadline);
  if (!status.ok()) return ioFailure(status, deadline, root, context);
  FrameHeader decoded = wire::decodeHeader(header_bytes);
  if (decoded.magic != wire::kFrameMagic) {
    return malformedReply(root, "bad frame magic (is a sparsecoll root listening there?)");
  }
  if (decoded.payload_bytes > max_payload) {
    return malformedReply(root, "a " + std::string(wire::frameTypeName(decoded.type)) +
                                    " frame of " + std::to_string(decoded.payload_bytes) +
                                    " payload bytes");
  }
  Bytes body(decoded.payload_bytes);
  status = recvExact(socket, body.data(), body.size(), deadline);
  if (!status.ok()) return ioFailure(status, deadline, root, context);
  *header = decoded;
  *payload = std::move(body);
  return scclSuccess;
}

// The error a RoundError frame reports: its code when it is a failure code, else remote error.
scclResult_t roundErrorResult(const Bytes& payload, uint64_t round) {
  uint32_t code = byte_order::getU32(payload.data());
  std::string reason = wire::printableText(payload.data() + 4, payload.size() - 4);
  scclResult_t result = scclRemoteError;
  if (code > scclSuccess && code < scclNumResults && code != scclInProgress) {
    result = static_cast<scclResult_t>(code);
  }
  return fail(result, "bootstrap: all-gather round %llu failed: %s", static_cast<ull>(round),
              reason.c_str());
}

// Says hello and waits until the root accepts (everybody joined) or rejects this rank.
scclResult_t joinRendezvous(const Socket& socket, const JobToken& token, int rank, int nranks,
                            const Deadline& deadline, const std::string& root) {
  wire::Hello hello{token, static_cast<uint32_t>(nranks), static_cast<uint32_t>(rank)};
  Bytes frame = wire::encodeHelloFrame(hello);
  IoStatus status = sendExact(socket, frame.data(), frame.size(), deadline);
  // A root that closed on us may have said why: the reply below reads its reason.
  if (!status.ok() && status.kind != IoStatus::Kind::PeerClosed) {
    return ioFailure(status, deadline, root, "sending the hello of rank " + std::to_string(rank));
  }
  std::string context =
      "waiting for the root at " + root + " to answer rank " + std::to_string(rank) + "'s hello";
  for (;;) {
    FrameHeader header;
    Bytes payload;
    SCCL_CHECK(
        recvSmallFrame(socket, deadline, wire::kMaxReasonBytes, root, context, &header, &payload));
    auto type = static_cast<FrameType>(header.type);
    if (type == FrameType::Rejected) {  // readable whatever the root's protocol version
      std::string reason = wire::printableText(payload.data(), payload.size());
      return fail(scclInvalidUsage, "bootstrap rejected: %s", reason.c_str());
    }
    if (header.version != kBootstrapProtocolVersion) {
      return fail(scclInvalidUsage,
                  "bootstrap: the root at %s speaks protocol version %u, this rank version %u",
                  root.c_str(), header.version, kBootstrapProtocolVersion);
    }
    bool rank_pair = type == FrameType::Joined || type == FrameType::Accepted;
    if (!rank_pair || payload.size() != wire::kRankPairPayloadBytes) {
      return malformedReply(root, std::string("unexpected ") + wire::frameTypeName(header.type) +
                                      " frame during the rendezvous");
    }
    uint32_t root_nranks = byte_order::getU32(payload.data());
    uint32_t value = byte_order::getU32(payload.data() + 4);
    if (root_nranks != static_cast<uint32_t>(nranks)) {
      return malformedReply(root, "nranks " + std::to_string(root_nranks) + " in its answer");
    }
    if (type == FrameType::Accepted) {
      if (value != static_cast<uint32_t>(rank)) {
        return malformedReply(root, "accepted another rank");
      }
      return scclSuccess;
    }
    // Joined: `value` ranks (this one included) have joined so far.
    context = "waiting for the other ranks to join (rank " + std::to_string(rank) + " was " +
              std::to_string(value) + " of " + std::to_string(nranks) + " to join the root at " +
              root + ")";
  }
}

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(Socket socket, int rank, int nranks, const JobToken& token, int64_t timeout_ms,
               std::string root)
      : socket_(std::move(socket)),
        rank_(rank),
        nranks_(nranks),
        token_(token),
        timeout_ms_(timeout_ms),
        root_(std::move(root)) {}

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const std::array<uint8_t, 16>& jobToken() const override { return token_; }

  scclResult_t allGather(const void* mine, void* all, size_t bytes) override {
    SCCL_REQUIRE_ARG(bytes == 0 || (mine != nullptr && all != nullptr),
                     "bootstrap allGather: NULL buffer with %zu bytes", bytes);
    SCCL_REQUIRE_ARG(
        bytes <= wire::kMaxRoundPayloadBytes &&
            bytes * static_cast<uint64_t>(nranks_) <= wire::kMaxRoundResultBytes,
        "bootstrap allGather: %zu bytes per rank over %d ranks exceeds the bootstrap's "
        "limits (%llu per rank, %llu in all); it is meant for set-up data",
        bytes, nranks_, static_cast<ull>(wire::kMaxRoundPayloadBytes),
        static_cast<ull>(wire::kMaxRoundResultBytes));
    if (broken_ != scclSuccess) {
      return fail(broken_, "bootstrap: unusable after an earlier failure: %s",
                  broken_reason_.c_str());
    }
    scclResult_t result = exchangeRound(mine, all, bytes);
    if (result != scclSuccess) {
      broken_ = result;
      // Repeated by later calls; its "bootstrap: " prefix would then appear twice.
      broken_reason_ = threadLastError();
      if (broken_reason_.rfind("bootstrap: ", 0) == 0) broken_reason_.erase(0, 11);
      return result;
    }
    ++round_;
    return scclSuccess;
  }

  scclResult_t barrier() override { return allGather(nullptr, nullptr, 0); }

 private:
  scclResult_t exchangeRound(const void* mine, void* all, size_t bytes) {
    Deadline deadline(timeout_ms_);
    std::string context =
        "in all-gather round " + std::to_string(round_) + " of rank " + std::to_string(rank_);
    uint8_t header_bytes[wire::kHeaderBytes];
    FrameHeader header;
    header.type = static_cast<uint16_t>(FrameType::RoundData);
    header.sequence = round_;
    header.payload_bytes = bytes;
    wire::encodeHeader(header, header_bytes);
    IoStatus status = sendExact(socket_, header_bytes, sizeof(header_bytes), deadline);
    if (status.ok()) status = sendExact(socket_, mine, bytes, deadline);
    // When the root has ended the job it has sent the reason first: the receive below reads it.
    if (!status.ok() && status.kind != IoStatus::Kind::PeerClosed) {
      return ioFailure(status, deadline, root_, context);
    }
    status = recvExact(socket_, header_bytes, sizeof(header_bytes), deadline);
    if (!status.ok()) return ioFailure(status, deadline, root_, context);
    header = wire::decodeHeader(header_bytes);
    if (header.magic != wire::kFrameMagic || header.version != kBootstrapProtocolVersion) {
      return malformedReply(root_, "bad frame magic or version " + context);
    }
    auto type = static_cast<FrameType>(header.type);
    if (type == FrameType::RoundError) return readRoundError(header, deadline, context);
    uint64_t expected = static_cast<uint64_t>(bytes) * static_cast<uint64_t>(nranks_);
    if (type != FrameType::RoundResult || header.sequence != round_ ||
        header.payload_bytes != expected) {
      return malformedReply(root_, std::string("a ") + wire::frameTypeName(header.type) +
                                       " frame of round " + std::to_string(header.sequence) +
                                       " with " + std::to_string(header.payload_bytes) + " bytes " +
                                       context);
    }
    status = recvExact(socket_, all, expected, deadline);
    if (!status.ok()) return ioFailure(status, deadline, root_, context);
    return scclSuccess;
  }

  scclResult_t readRoundError(const FrameHeader& header, const Deadline& deadline,
                              const std::string& context) {
    if (header.payload_bytes < 4 || header.payload_bytes > 4 + wire::kMaxReasonBytes) {
      return malformedReply(root_, "a RoundError frame of " + std::to_string(header.payload_bytes) +
                                       " bytes " + context);
    }
    Bytes payload(header.payload_bytes);
    IoStatus status = recvExact(socket_, payload.data(), payload.size(), deadline);
    if (!status.ok()) return ioFailure(status, deadline, root_, context);
    return roundErrorResult(payload, header.sequence);
  }

  Socket socket_;
  const int rank_;
  const int nranks_;
  const JobToken token_;
  const int64_t timeout_ms_;
  const std::string root_;  // address, for messages
  uint64_t round_ = 0;
  scclResult_t broken_ = scclSuccess;
  std::string broken_reason_;
};

}  // namespace

scclResult_t bootstrapCreateUniqueId(scclUniqueId* id) {
  SCCL_REQUIRE_ARG(id != nullptr, "scclGetUniqueId: uniqueId is NULL");
  return startBootstrapRoot(paramSocketIfname(), paramBootstrapTimeoutMs(), id);
}

scclResult_t Bootstrap::connect(const scclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                                std::unique_ptr<Bootstrap>* out) {
  SCCL_REQUIRE_ARG(out != nullptr, "bootstrap connect: output pointer is NULL");
  SCCL_REQUIRE_ARG(nranks >= 1 && static_cast<uint64_t>(nranks) <= wire::kMaxRanks,
                   "bootstrap connect: nranks %d out of range [1, %u]", nranks, wire::kMaxRanks);
  SCCL_REQUIRE_ARG(rank >= 0 && rank < nranks, "bootstrap connect: rank %d out of range [0, %d)",
                   rank, nranks);
  SCCL_REQUIRE_ARG(timeout_ms > 0, "bootstrap connect: timeout %lld ms is not positive",
                   static_cast<long long>(timeout_ms));
  UniqueIdContents contents;
  SCCL_CHECK(decodeUniqueId(id, &contents));
  SocketAddress root_address = socketAddressOf(contents);
  std::string root = root_address.toString();
  Deadline deadline(timeout_ms);
  Socket socket;
  SCCL_CHECK(connectWithRetry(root_address, deadline, &socket));
  SCCL_CHECK(joinRendezvous(socket, contents.token, rank, nranks, deadline, root));
  SCCL_INFO(LogSubsys::Bootstrap, "bootstrap: rank %d of %d joined through %s", rank, nranks,
            root.c_str());
  *out = std::make_unique<TcpBootstrap>(std::move(socket), rank, nranks, contents.token, timeout_ms,
                                        root);
  return scclSuccess;
}

}  // namespace sccl
