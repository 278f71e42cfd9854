// The bootstrap root's protocol: checking hellos, admitting ranks, running all-gather rounds,
// and ending a job that cannot go on (the event loop that feeds it is in root_service.cc).
#include <cstring>
#include <utility>

#include "core/log.h"
#include "transports/bootstrap/byte_order.h"
#include "transports/bootstrap/root_service.h"

namespace sccl {
namespace {

using wire::Bytes;
using wire::FrameType;
using wire::kHeaderBytes;
using ull = unsigned long long;

}  // namespace

// Checks what has arrived of the current frame: a stranger's first bytes as soon as they are in
// (garbage is turned away without waiting for a whole header), and every header once complete.
// False when the frame was refused.
bool RootService::checkFramePrefix(Connection& connection) {
  const Bytes& inbox = connection.inbox;
  if (connection.state == ConnState::AwaitingHello) {
    if (inbox.size() >= 4 && byte_order::getU32(inbox.data()) != wire::kFrameMagic) {
      reject(connection, "not a sparsecoll bootstrap hello (bad magic)");
      return false;
    }
    uint16_t version = inbox.size() >= 6 ? byte_order::getU16(inbox.data() + 4) : 0;
    if (inbox.size() >= 6 && version != kBootstrapProtocolVersion) {
      reject(connection, formatText("protocol version mismatch: the rank speaks bootstrap protocol "
                                    "version %u, the root speaks version %u",
                                    version, kBootstrapProtocolVersion));
      return false;
    }
  }
  if (inbox.size() != kHeaderBytes) return true;
  return checkHeader(connection, wire::decodeHeader(inbox.data()));
}

bool RootService::checkHeader(Connection& connection, const wire::FrameHeader& header) {
  auto type = static_cast<FrameType>(header.type);
  if (connection.state == ConnState::AwaitingHello) {
    if (type != FrameType::Hello) {
      reject(connection, formatText("expected a Hello frame, got frame type %u (%s)", header.type,
                                    wire::frameTypeName(header.type)));
    } else if (header.payload_bytes != wire::kHelloPayloadBytes) {
      reject(connection,
             formatText("malformed hello: %llu payload bytes, expected %zu",
                        static_cast<ull>(header.payload_bytes), wire::kHelloPayloadBytes));
    }
    return connection.state == ConnState::AwaitingHello;
  }
  std::string problem;
  if (header.magic != wire::kFrameMagic || header.version != kBootstrapProtocolVersion) {
    problem = "a frame with a bad magic or protocol version";
  } else if (phase_ == Phase::Rendezvous) {
    problem =
        formatText("a %s frame before the rendezvous completed", wire::frameTypeName(header.type));
  } else if (type != FrameType::RoundData) {
    problem = formatText("a %s frame where RoundData was due", wire::frameTypeName(header.type));
  } else if (header.payload_bytes > wire::kMaxRoundPayloadBytes ||
             header.payload_bytes * nranks_ > wire::kMaxRoundResultBytes) {
    // Checked before the payload is received, so that the root holds at most
    // kMaxRoundResultBytes of contributions (and as much for the result).
    problem = formatText(
        "%llu bytes for one round (the limits are %llu per rank and %llu for "
        "all ranks)",
        static_cast<ull>(header.payload_bytes), static_cast<ull>(wire::kMaxRoundPayloadBytes),
        static_cast<ull>(wire::kMaxRoundResultBytes));
  } else if (connection.contributed) {
    problem = formatText("round %llu before round %llu completed",
                         static_cast<ull>(header.sequence), static_cast<ull>(round_));
  }
  if (problem.empty()) return true;
  std::string reason = formatText("rank %d broke the bootstrap protocol: it sent %s",
                                  connection.rank, problem.c_str());
  if (phase_ == Phase::Rendezvous) {
    ranks_[connection.rank] = nullptr;  // the slot is free again for a well-behaved rank
    if (--joined_ == 0) nranks_ = 0;
    reject(connection, reason);
  } else {
    failJob(scclRemoteError, reason);
  }
  return false;
}

void RootService::dispatchFrame(Connection& connection) {
  wire::FrameHeader header = wire::decodeHeader(connection.inbox.data());
  if (connection.state == ConnState::AwaitingHello) {
    wire::Hello hello = wire::decodeHelloPayload(connection.inbox.data() + kHeaderBytes);
    connection.inbox.clear();
    std::string problem = helloProblem(hello);
    if (problem.empty()) {
      registerRank(connection, hello);
    } else {
      reject(connection, problem);
    }
  } else if (connection.state == ConnState::Rank) {
    handleContribution(connection, header);
  }
}

std::string RootService::helloProblem(const wire::Hello& hello) const {
  if (!jobTokensEqual(hello.token, token_)) {
    return "job token does not match (the unique id belongs to another job, or was altered)";
  }
  if (hello.nranks < 1 || hello.nranks > wire::kMaxRanks) {
    return formatText("nranks %u out of range [1, %u]", hello.nranks, wire::kMaxRanks);
  }
  if (hello.rank >= hello.nranks) {
    return formatText("rank %u out of range [0, %u)", hello.rank, hello.nranks);
  }
  if (phase_ != Phase::Rendezvous) {
    return formatText(
        "rank %u came after the rendezvous of this unique id completed (a unique id "
        "serves one communicator)",
        hello.rank);
  }
  if (nranks_ != 0 && hello.nranks != nranks_) {
    return formatText("nranks %u does not match nranks %u of the ranks that joined before",
                      hello.nranks, nranks_);
  }
  if (nranks_ != 0 && ranks_[hello.rank] != nullptr) {
    return formatText("rank %u already joined", hello.rank);
  }
  return "";
}

void RootService::registerRank(Connection& connection, const wire::Hello& hello) {
  if (nranks_ == 0) {
    nranks_ = hello.nranks;
    ranks_.assign(nranks_, nullptr);
  }
  ranks_[hello.rank] = &connection;
  connection.state = ConnState::Rank;
  connection.rank = static_cast<int>(hello.rank);
  --connections_awaiting_hello_;
  ++joined_;
  queue(connection, std::make_shared<const Bytes>(
                        wire::encodeRankPairFrame(FrameType::Joined, nranks_, joined_)));
  SCCL_INFO(LogSubsys::Bootstrap, "bootstrap root %s: rank %u joined (%u of %u)", address_.c_str(),
            hello.rank, joined_, nranks_);
  if (joined_ == nranks_) completeRendezvous();
}

void RootService::completeRendezvous() {
  phase_ = Phase::Rounds;
  ranks_open_ = nranks_;
  for (uint32_t rank = 0; rank < nranks_; ++rank) {
    queue(*ranks_[rank], std::make_shared<const Bytes>(
                             wire::encodeRankPairFrame(FrameType::Accepted, nranks_, rank)));
  }
  SCCL_INFO(LogSubsys::Bootstrap, "bootstrap root %s: all %u ranks joined", address_.c_str(),
            nranks_);
}

void RootService::handleContribution(Connection& connection, const wire::FrameHeader& header) {
  if (ranks_open_ < nranks_) {
    failJob(scclRemoteError,
            formatText("rank %d disconnected, so the round cannot complete", departed_rank_));
    return;
  }
  connection.contributed = true;
  connection.contributed_round = header.sequence;
  connection.contribution.swap(connection.inbox);  // header included: payload at kHeaderBytes
  connection.inbox.clear();
  if (++contributions_ == nranks_) completeRound();
}

std::string RootService::roundMismatch() const {
  uint64_t rank0_bytes = ranks_[0]->contribution.size() - kHeaderBytes;
  for (uint32_t rank = 0; rank < nranks_; ++rank) {
    const Connection& connection = *ranks_[rank];
    uint64_t bytes = connection.contribution.size() - kHeaderBytes;
    if (connection.contributed_round != round_) {
      return formatText(
          "out of step: rank %u sent round %llu while the root is at round %llu "
          "(every rank must make the same bootstrap calls in the same order)",
          rank, static_cast<ull>(connection.contributed_round), static_cast<ull>(round_));
    }
    if (bytes != rank0_bytes) {
      return formatText(
          "size mismatch: rank %u passed %llu bytes, rank 0 passed %llu (every rank "
          "must pass the same size)",
          rank, static_cast<ull>(bytes), static_cast<ull>(rank0_bytes));
    }
  }
  return "";
}

void RootService::completeRound() {
  std::string mismatch = roundMismatch();
  if (!mismatch.empty()) {
    failJob(scclInvalidUsage, mismatch);
    return;
  }
  uint64_t bytes_per_rank = ranks_[0]->contribution.size() - kHeaderBytes;
  auto result = std::make_shared<Bytes>(kHeaderBytes + bytes_per_rank * nranks_);
  wire::FrameHeader header;
  header.type = static_cast<uint16_t>(FrameType::RoundResult);
  header.sequence = round_;
  header.payload_bytes = bytes_per_rank * nranks_;
  wire::encodeHeader(header, result->data());
  for (uint32_t rank = 0; rank < nranks_; ++rank) {
    Connection& connection = *ranks_[rank];
    if (bytes_per_rank > 0) {
      std::memcpy(result->data() + kHeaderBytes + rank * bytes_per_rank,
                  connection.contribution.data() + kHeaderBytes, bytes_per_rank);
    }
    connection.contributed = false;
    connection.contribution.clear();
  }
  for (uint32_t rank = 0; rank < nranks_; ++rank) queue(*ranks_[rank], result);
  SCCL_TRACE(LogSubsys::Bootstrap, "bootstrap root %s: round %llu done, %llu bytes per rank",
             address_.c_str(), static_cast<ull>(round_), static_cast<ull>(bytes_per_rank));
  ++round_;
  contributions_ = 0;
}

void RootService::reject(Connection& connection, const std::string& reason) {
  SCCL_WARN(LogSubsys::Bootstrap, "bootstrap root %s: rejected a connection: %s", address_.c_str(),
            reason.c_str());
  queue(connection, std::make_shared<const Bytes>(wire::encodeRejectedFrame(reason)));
  startClosing(connection);
}

void RootService::rankDisconnected(Connection& connection) {
  int rank = connection.rank;
  ranks_[rank] = nullptr;
  closeNow(connection);
  if (phase_ == Phase::Rendezvous) {
    // It may come back (or another process may take its place) before the deadline.
    if (--joined_ == 0) nranks_ = 0;
    SCCL_INFO(LogSubsys::Bootstrap,
              "bootstrap root %s: rank %d left before the rendezvous "
              "completed",
              address_.c_str(), rank);
    return;
  }
  --ranks_open_;
  if (departed_rank_ < 0) departed_rank_ = rank;
  if (contributions_ > 0) {
    failJob(scclRemoteError, formatText("rank %d disconnected during the round", rank));
    return;
  }
  if (ranks_open_ == 0) phase_ = Phase::Done;
}

void RootService::failJob(scclResult_t code, const std::string& reason) {
  SCCL_WARN(LogSubsys::Bootstrap,
            "bootstrap root %s: all-gather round %llu failed: %s; ending "
            "the job",
            address_.c_str(), static_cast<ull>(round_), reason.c_str());
  auto frame = std::make_shared<const Bytes>(wire::encodeRoundErrorFrame(round_, code, reason));
  for (auto& connection : connections_) {
    if (connection->closed) continue;
    if (connection->state == ConnState::Rank) {
      queue(*connection, frame);
      startClosing(*connection);
    } else if (connection->state == ConnState::AwaitingHello) {
      closeNow(*connection);
    }
  }
  listener_.reset();
  ranks_.clear();
  phase_ = Phase::Draining;
}

}  // namespace sccl
