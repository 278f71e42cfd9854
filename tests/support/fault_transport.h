// A test-only transport that wraps a real one (the in-process transport in the unit tests) and
// plays a hostile or broken peer: after the n-th operation of a kind completes, it rewrites what
// this rank received from one peer (its slice of an all-gather, a broadcast from it, or the
// reduced output of an all-reduce), or it makes the operation fail as a transport that detected a
// truncated frame would. Installed on every rank of a job with the same fault, it gives every
// rank the same hostile view of that peer, as a peer sending the same bad bytes to all would.
//
// It sits between an algorithm and the transport, so what it feeds the library is exactly what
// the library must bounds-check before use (docs/reliability.md, "Peer data"). Nothing of it is
// built into the library.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "core/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "transports/transport.h"

namespace sccl_test {

enum class FaultOp { AllGather, AllReduce, Broadcast };

struct Fault {
  FaultOp op = FaultOp::AllGather;
  int nth = 0;           // 0: the first operation of that kind after installation
  int hostile_rank = 0;  // whose slice (all-gather) or broadcast is rewritten
  // Rewrites `bytes` received bytes in place. Unset: the operation instead fails with
  // `transport_error` after completing (what a transport reports on a short or broken frame).
  std::function<void(std::byte* data, size_t bytes)> mutate;
  scclResult_t transport_error = scclRemoteError;
};

class FaultTransport final : public sccl::Transport {
 public:
  FaultTransport(std::unique_ptr<sccl::Transport> inner, Fault fault)
      : inner_(std::move(inner)), fault_(std::move(fault)) {}

  const char* name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int nranks() const override { return inner_->nranks(); }
  sccl::TransportCapabilities capabilities() const override { return inner_->capabilities(); }

  scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) override {
    scclResult_t result = inner_->allGather(send, recv, bytes_per_rank);
    if (result != scclSuccess || !due(FaultOp::AllGather)) return result;
    auto* slice = static_cast<std::byte*>(recv) + size_t(fault_.hostile_rank) * bytes_per_rank;
    return apply(slice, bytes_per_rank);
  }

  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override {
    scclResult_t result = inner_->allGatherV(send, send_bytes, recv, recv_bytes, recv_offsets);
    if (result != scclSuccess || !due(FaultOp::AllGather)) return result;
    auto* slice = static_cast<std::byte*>(recv) + recv_offsets[fault_.hostile_rank];
    return apply(slice, recv_bytes[fault_.hostile_rank]);
  }

  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         sccl::ReduceOp op) override {
    scclResult_t result = inner_->allReduce(send, recv, count, dtype, op);
    if (result != scclSuccess || !due(FaultOp::AllReduce)) return result;
    return apply(static_cast<std::byte*>(recv), count * sccl::dataTypeSize(dtype));
  }

  scclResult_t broadcast(void* buf, size_t bytes, int root) override {
    scclResult_t result = inner_->broadcast(buf, bytes, root);
    if (result != scclSuccess || !due(FaultOp::Broadcast) || root != fault_.hostile_rank)
      return result;
    return apply(static_cast<std::byte*>(buf), bytes);
  }

  scclResult_t send(const void* buf, size_t bytes, int peer, int tag) override {
    return inner_->send(buf, bytes, peer, tag);
  }
  scclResult_t recv(void* buf, size_t bytes, int peer, int tag) override {
    return inner_->recv(buf, bytes, peer, tag);
  }
  scclResult_t barrier() override { return inner_->barrier(); }
  scclResult_t createWindow(size_t bytes, std::unique_ptr<sccl::Window>* out) override {
    return inner_->createWindow(bytes, out);
  }
  void abort() override { inner_->abort(); }
  scclResult_t pollHealth() override { return inner_->pollHealth(); }

  // How many times the fault fired (0 or 1).
  int fired() const { return fired_.load(); }

 private:
  bool due(FaultOp op) {
    if (op != fault_.op) return false;
    return seen_[int(op)]++ == fault_.nth;
  }

  scclResult_t apply(std::byte* data, size_t bytes) {
    ++fired_;
    if (!fault_.mutate) {
      return sccl::fail(fault_.transport_error,
                        "fault transport: the frame from rank %d ended early (injected)",
                        fault_.hostile_rank);
    }
    fault_.mutate(data, bytes);
    return scclSuccess;
  }

  std::unique_ptr<sccl::Transport> inner_;
  Fault fault_;
  int seen_[3] = {0, 0, 0};
  std::atomic<int> fired_{0};
};

// Replaces comm's transport by a FaultTransport around it; returns the wrapper (owned by comm).
inline FaultTransport* installFault(scclComm_t comm, Fault fault) {
  auto wrapper = std::make_unique<FaultTransport>(std::move(comm->transport), std::move(fault));
  FaultTransport* raw = wrapper.get();
  comm->transport = std::move(wrapper);
  return raw;
}

}  // namespace sccl_test
