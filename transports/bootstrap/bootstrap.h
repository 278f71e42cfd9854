// Bootstrap: the TCP rendezvous that turns a scclUniqueId into a group of ranks that know each
// other. It is for set-up exchanges only (rank information, transport addresses), never a data
// path.
//
// The unique id (see unique_id.h) carries rank 0's listening address and port, a protocol version
// and a random 128-bit per-job token. scclGetUniqueId starts the root service: a thread in the
// calling process that accepts the ranks' connections, checks each hello (magic, protocol
// version, token, nranks, rank in range and not taken), rejects bad ones with a reason the
// client reports, and then serves all-gather rounds until every rank has disconnected
// (bootstrap_root.h; frames in wire.h; docs/bootstrap.md tells the whole protocol).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Creates a unique id whose root service listens on SCCL_SOCKET_IFNAME (or loopback) and starts
// that service in this process. The service ends when every rank of the job has disconnected,
// when the rendezvous did not complete within SCCL_BOOTSTRAP_TIMEOUT_MS, or after a failed
// round. An SCCL_SOCKET_IFNAME naming no interface (or one without an address) is
// scclInvalidArgument, naming it. *id is written only on success.
scclResult_t bootstrapCreateUniqueId(scclUniqueId* id);

class Bootstrap {
 public:
  // Connects to the root named by `id` as `rank` of `nranks` and waits until all ranks joined.
  // `timeout_ms` bounds this call and, later, each allGather/barrier. Errors: scclInvalidArgument
  // (bad arguments, or id not a sparsecoll id), scclInvalidUsage (an id of another protocol
  // version, naming both; or rejected by the root: wrong token, protocol version, nranks
  // mismatch, rank taken; the message says which), scclSystemError (socket failures),
  // scclTimeout (deadline passed; the message says whether the root or the other ranks were
  // missing), scclRemoteError (root or a peer vanished). *out is set only on success.
  // Thread-safe: the ranks of one job may be threads of one process.
  static scclResult_t connect(const scclUniqueId& id, int rank, int nranks, int64_t timeout_ms,
                              std::unique_ptr<Bootstrap>* out);

  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // The job token from the id (identifies the communicator being built).
  virtual const std::array<uint8_t, 16>& jobToken() const = 0;

  // all[r * bytes .. (r+1) * bytes) = mine of rank r. Collective; every rank passes the same
  // bytes (a mismatch is detected and returned as scclInvalidUsage on every rank, naming the
  // first mismatching rank). In place allowed (mine == all + rank * bytes). At most 16 MiB per
  // rank and 256 MiB in all (scclInvalidArgument beyond; this is for set-up data). A rank that
  // disconnects during a round gives the others scclRemoteError. After any failure other than
  // scclInvalidArgument the bootstrap is broken and every later call repeats the error; the
  // contents of `all` after a failure are unspecified.
  virtual scclResult_t allGather(const void* mine, void* all, size_t bytes) = 0;
  // An all-gather of 0 bytes.
  virtual scclResult_t barrier() = 0;
};

}  // namespace sccl
