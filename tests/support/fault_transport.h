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
#include <vector>

#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "transports/transport.h"

namespace sccl_test {

// Agreement: the call records gathered at a collective's start (transports/agreement_record.h).
enum class FaultOp { AllGather, AllReduce, Broadcast, Agreement };

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
  // The records go through the inner transport's own agreement (folded or not); a fault on them
  // rewrites the hostile rank's record before the library checks it.
  scclResult_t agree(const sccl::CallAgreement& agreement) override {
    if (fault_.op != FaultOp::Agreement) return inner_->agree(agreement);
    agreement_ = agreement;
    sccl::CallAgreement wrapped;
    wrapped.mine = agreement.mine;
    wrapped.context = this;
    wrapped.check = [](const sccl::CallRecord* all, int nranks, void* self) -> scclResult_t {
      auto* fault = static_cast<FaultTransport*>(self);
      std::vector<sccl::CallRecord> copy(all, all + nranks);
      if (fault->due(FaultOp::Agreement)) {
        scclResult_t applied = fault->apply(
            reinterpret_cast<std::byte*>(&copy[size_t(fault->fault_.hostile_rank)]),
            sizeof(sccl::CallRecord));
        if (applied != scclSuccess) return applied;
      }
      return fault->agreement_.check(copy.data(), nranks, fault->agreement_.context);
    };
    return inner_->agree(wrapped);
  }
  bool carryAgreement(const sccl::CallAgreement& /*agreement*/) override {
    return false;  // every agreement goes through agree() above, where a fault can reach it
  }
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
  int seen_[4] = {0, 0, 0, 0};
  sccl::CallAgreement agreement_;
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
