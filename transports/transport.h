// The transport interface: what a communication engine (in-process threads, MPI, and later UCX
// and NCCL) must provide to sparsecoll. Algorithms talk only to this interface.
//
// Contract shared by every operation:
//  - Collective operations are called by every rank of the communicator in the same order with
//    matching sizes. Every public collective first agrees on a call record (agree, or
//    carryAgreement folded into the next collective; transports/agreement_record.h), so mismatched
//    public calls never reach the data operations; a transport still bounds-checks what it
//    reads from peers.
//  - Blocking: an operation returns when this rank's output is complete and its input may be
//    reused. Every wait honours the deadline given at creation (timeout_ms) and returns
//    scclTimeout when it passes; a peer that failed or aborted yields scclRemoteError.
//  - After an operation fails with anything other than scclInvalidArgument the transport is
//    broken: further operations return the same error quickly, and only destruction is valid.
//  - Buffers are host memory unless capabilities().device_memory says otherwise.
//  - In-place operation (send == recv) is allowed where stated.
//  - Results of allReduce are bitwise identical on every rank and deterministic: element-wise
//    ((x_0 + x_1) + x_2) + ... in rank order (max / min for Max / Min), with float16/bfloat16
//    summed in float32 and rounded once. Every transport implements exactly this order so that
//    results do not depend on the transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/shared/reduce_op.h"
#include "sparsecoll/sparsecoll.h"
#include "transports/agreement_record.h"
#include "transports/stream_collectives.h"
#include "transports/window.h"

namespace sccl {

struct TransportCapabilities {
  bool device_memory = false;  // may buffers live in GPU memory?
  bool one_sided = false;      // are registered windows and puts available? (EventGraD)
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const char* name() const = 0;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  virtual TransportCapabilities capabilities() const = 0;

  // recv[r * bytes_per_rank .. (r+1) * bytes_per_rank) = send of rank r. In place allowed when
  // send == recv + rank * bytes_per_rank.
  virtual scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) = 0;

  // Variable all-gather: rank r contributes recv_bytes[r] bytes (its send_bytes must equal
  // recv_bytes[rank]); they land at recv + recv_offsets[r]. Every rank passes the same arrays.
  virtual scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv,
                                  const size_t* recv_bytes, const size_t* recv_offsets) = 0;

  // Element-wise reduction of `count` elements; send == recv allowed. Sum, Max and Min support
  // every scclDataType_t (Max and Min propagate NaN for floating types). A floating
  // result that is NaN is the canonical quiet NaN of its type, whatever the operands' payloads.
  virtual scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                                 ReduceOp op) = 0;

  // send holds nranks x recvcount elements; recv = the reduction over ranks of block `rank` of
  // send, element for element the same bits as that slice of allReduce's result (rank order).
  // In place allowed when recv == send + rank * recvcount elements. The default reduces the whole
  // vector with allReduce into host memory and copies this rank's block: correct on host memory,
  // twice the bytes of a reduce-scatter; transports override it with a direct one (each rank sends
  // block r to rank r, which reduces the n copies), and those on device memory must.
  virtual scclResult_t reduceScatter(const void* send, void* recv, size_t recvcount,
                                     scclDataType_t dtype, ReduceOp op);

  // Copies root's buf to every rank's buf.
  virtual scclResult_t broadcast(void* buf, size_t bytes, int root) = 0;

  // Point-to-point: a message of exactly `bytes` bytes; messages between one pair of ranks with
  // the same tag arrive in order. send may return before the peer receives.
  virtual scclResult_t send(const void* buf, size_t bytes, int peer, int tag) = 0;
  virtual scclResult_t recv(void* buf, size_t bytes, int peer, int tag) = 0;

  virtual scclResult_t barrier() = 0;

  // One-sided windows (transports/window.h), where capabilities().one_sided: collective, every
  // rank passes the same `bytes` (> 0). Others return scclInvalidUsage.
  virtual scclResult_t createWindow(size_t bytes, std::unique_ptr<Window>* out);

  // Collectives on the caller's CUDA stream (transports/stream_collectives.h) where the transport
  // can order its work on one; null otherwise (every host transport).
  virtual StreamCollectives* streamCollectives() { return nullptr; }

  // All-gathers every rank's call record (one 64-byte exchange, host memory) and runs
  // agreement.check on them; the default is allGather. Every public collective starts with it
  // (or with carryAgreement), so it is safe whatever the other ranks entered.
  virtual scclResult_t agree(const CallAgreement& agreement);

  // Folds `agreement` into the next allGather/allGatherV/allReduce/broadcast/barrier of this
  // rank: its records are exchanged at that operation's first synchronisation and checked
  // before any data is read, saving agree's round trip. Returns false where the transport cannot
  // (the caller then calls agree). `agreement` must outlive that operation.
  virtual bool carryAgreement(const CallAgreement& /*agreement*/) { return false; }

  // Marks the communication failed so that peers blocked with this rank are released (where the
  // engine allows it). Must not block. Destruction after abort must not block either.
  virtual void abort() = 0;

  // Non-blocking health check for scclCommGetAsyncError: scclSuccess while the communication is
  // healthy as far as this rank can tell without waiting; the error a next operation would
  // return once a peer is known to have failed or aborted (scclRemoteError) or the job timed
  // out. Must not block, communicate, or change state; callable from another thread while an
  // operation runs. The default reports nothing: that transport's errors show at the next call
  // (docs/reliability.md lists what each transport detects).
  virtual scclResult_t pollHealth() { return scclSuccess; }
};

}  // namespace sccl
