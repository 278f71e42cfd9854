// Device buffers over a host transport (local, mpi, ucx): a Transport that carries device memory
// by staging it through page-locked host buffers around the host transport's own operations.
//
// Why: clusters without NCCL still run the GPU path, and several ranks can share ONE GPU (NCCL
// refuses two ranks on one device): in-process ranks as threads, or processes, each with its own
// stream, all on GPU 0. That is how the multi-rank device tests run on a one-GPU machine.
//
// How: for each buffer of an operation that is device memory, the bytes it sends are copied to a
// pinned send buffer, the host transport runs on pinned memory, and what it received is copied
// back; host buffers pass through untouched. The two pinned buffers belong to the communicator,
// are allocated at the first device call and only grow, to the largest operation's bytes: an
// operation's staged bytes are its bytes on the wire for this rank (all-gather: n x the slot,
// all-reduce: the reduced vector), never the sparsifier's count. Copies are complete before an
// operation returns (the copier waits for them), so the transport stays blocking, as every
// transport is; the caller's kernels must be complete before an operation reads a buffer (the
// device paths synchronise the caller's stream first, as they do for NCCL).
//
// Not carried: one-sided windows stay host memory (EventGraD), and there are no stream
// collectives (streamCollectives() is null): a call that must only enqueue work on a stream (the
// stream-ordered, graph-capturable sparse all-reduce) needs NCCL, because staging waits on the
// host between the copy and the host transport's operation.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "transports/staging/device_copier.h"
#include "transports/transport.h"

namespace sccl {

class PinnedStagingTransport final : public Transport {
 public:
  // `inner` is the communicator's slot of its host transport: read at every operation, so a
  // transport replaced in that slot (a test's fault-injecting wrapper) is the one used.
  PinnedStagingTransport(const std::unique_ptr<Transport>* inner,
                         std::unique_ptr<DeviceCopier> copier);
  ~PinnedStagingTransport() override;
  PinnedStagingTransport(const PinnedStagingTransport&) = delete;
  PinnedStagingTransport& operator=(const PinnedStagingTransport&) = delete;

  const char* name() const override { return name_.c_str(); }
  int rank() const override { return inner().rank(); }
  int nranks() const override { return inner().nranks(); }
  TransportCapabilities capabilities() const override;

  scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) override;
  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override;
  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         ReduceOp op) override;
  scclResult_t reduceScatter(const void* send, void* recv, size_t recvcount, scclDataType_t dtype,
                             ReduceOp op) override;
  scclResult_t broadcast(void* buf, size_t bytes, int root) override;
  scclResult_t send(const void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t recv(void* buf, size_t bytes, int peer, int tag) override;
  scclResult_t barrier() override;
  // Call records are host memory: they go to the host transport as they are (each operation
  // here runs exactly one operation of the host transport, which carries a folded agreement).
  scclResult_t agree(const CallAgreement& agreement) override { return inner().agree(agreement); }
  bool carryAgreement(const CallAgreement& agreement) override {
    return inner().carryAgreement(agreement);
  }
  scclResult_t createWindow(size_t bytes, std::unique_ptr<Window>* out) override;
  void abort() override;

  // Bytes of the two pinned buffers now (they only grow): what the staging costs in host memory.
  size_t stagingBytes() const { return send_.bytes + recv_.bytes; }

 private:
  struct PinnedBuffer {
    void* data = nullptr;
    size_t bytes = 0;
  };

  Transport& inner() const { return **inner_; }
  // At least `bytes` of `buffer` (its contents are not kept when it grows).
  scclResult_t reserve(PinnedBuffer& buffer, size_t bytes, void** out);
  // `buf` in host memory: itself, or a pinned copy of its first `bytes` in `buffer`.
  scclResult_t hostSource(const void* buf, size_t bytes, PinnedBuffer& buffer, const void** out);
  scclResult_t copyIn(void* host, const void* device, size_t bytes);
  scclResult_t copyOut(void* device, const void* host, size_t bytes);
  // A copy or allocation failure breaks the transport (the host transport may have completed
  // the operation with the peers; this rank's result is lost), as any transport failure does.
  scclResult_t failed(scclResult_t result);

  const std::unique_ptr<Transport>* inner_;
  std::unique_ptr<DeviceCopier> copier_;
  std::string name_;
  PinnedBuffer send_, recv_;
  scclResult_t broken_ = scclSuccess;
};

}  // namespace sccl
